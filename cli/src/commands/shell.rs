//! `completions` and `man`: generated from the clap definitions the parser uses, so
//! every subcommand and flag is there and none is written by hand.

use std::io::Write;

use anyhow::{Context, Result};

use super::Status;
use crate::args::{Command, CompletionsArgs, ManArgs};
use crate::output::refuse;

/// `completions SHELL`: the script on stdout.
pub fn completions(args: &CompletionsArgs) -> Result<Status> {
    let mut cmd = crate::args::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "shardsmith", &mut out);
    std::io::stdout()
        .write_all(&out)
        .context("writing the completion script")?;
    Ok(Status::Clean)
}

/// `man [COMMAND]`: the page in roff on stdout.
pub fn man(args: &ManArgs) -> Result<Status> {
    let mut cmd = crate::args::command();
    // Global options are copied into every subcommand when the command is built.
    cmd.build();
    let page = match &args.command {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(sub) => {
                let title = format!("shardsmith-{name}");
                sub.clone()
                    .name(title.clone())
                    .bin_name(format!("shardsmith {name}"))
                    .display_name(title)
                    .version(env!("CARGO_PKG_VERSION"))
            }
            None => refuse!(
                Usage,
                "`{name}` is not a shardsmith command; the commands are {}",
                Command::NAMES.join(", ")
            ),
        },
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .context("rendering the man page")?;
    std::io::stdout()
        .write_all(&out)
        .context("writing the man page")?;
    Ok(Status::Clean)
}
