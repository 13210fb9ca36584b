//! Integration tests of the `shardsmith` binary: one test binary, one module per area.

mod audit;
mod big_trees;
mod checkpoint;
mod checkpoint_interop;
mod cli;
mod failed_runs;
mod faults;
mod hostile;
mod interop;
mod interop_mds;
mod interop_parquet;
mod manifest_cmd;
mod mds;
mod pack;
mod pack_left_out;
mod pack_wds_compressed;
mod parquet;
mod sign;
mod sign_interop;
mod tokenize;
mod tokenize_interop;
mod tokenize_runs;
mod tokenize_verify;
mod util;
mod verify;
mod verify_nothing;
