//! The `shardsmith` binary: the application is the library ([`shardsmith_cli`]); this
//! file only chooses the allocator's policy before any thread starts.

mod alloc;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match shardsmith_cli::parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    alloc::configure(shardsmith_cli::keeps_freed_memory(&cli));
    shardsmith_cli::execute(&cli)
}
