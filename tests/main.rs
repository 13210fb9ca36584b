//! Integration tests of the `shardsmith` binary: one test binary, one module per area.

mod audit;
mod checkpoint;
mod checkpoint_interop;
mod cli;
mod hostile;
mod interop;
mod manifest_cmd;
mod pack;
mod util;
mod verify;
