//! `completions` and `man`: the shell completion scripts and man pages, generated from
//! the command-line definitions.

use clap::Args;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    ///
    /// Example: shardsmith completions bash
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (shardsmith-COMMAND(1)); the page of shardsmith itself without it
    ///
    /// Example: shardsmith man verify | man -l -
    pub command: Option<String>,
}
