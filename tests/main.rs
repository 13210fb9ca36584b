//! Integration tests of the `shardsmith` binary: one test binary, one folder per command
//! or area (tests/README.md lists them). A test that needs an env, a server, root or
//! Slurm is ignored with its cost (`project::costs`): `cargo test` runs the rest,
//! tests/run_all.sh everything (tests/README.md).

mod checkpoint;
mod cli;
mod interop;
mod look;
mod manifest;
mod pack;
mod project;
mod remote;
mod runs;
mod sign;
mod split;
mod stage;
mod tokenize;
mod util;
mod verify;
