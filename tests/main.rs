//! Integration tests of the `shardsmith` binary: one test binary, one module per area.

mod cli;
mod interop;
mod manifest_cmd;
mod pack;
mod tokenize;
mod tokenize_interop;
mod tokenize_runs;
mod tokenize_verify;
mod util;
mod verify;
