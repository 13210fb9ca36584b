//! The object `--json` prints when a command cannot run (exit 2).

use schemars::JsonSchema;
use serde::Serialize;

/// What a command that could not run prints with `--json`: one object on stdout, so a
/// `| jq` pipeline always gets an answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Error<'a> {
    /// The subcommand that was run (`pack`, `verify`, ...), or `""` when the arguments
    /// named none.
    pub command: &'a str,
    /// What went wrong.
    pub error: ErrorDetail,
    /// The process exit code: always 2 (the command could not run).
    pub exit_code: u8,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// The error of an [`Error`] report.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// How to go on when there is more to say than the message, or null.
    pub hint: Option<String>,
    /// The error's stable snake_case kind: `usage` (arguments clap or the command
    /// refused), `not_found`, `io`, `output_conflict`, ... (listed in `cli/README.md`,
    /// "Exit codes").
    pub kind: shardsmith_manifest::ErrorKind,
    /// The error and its causes on one line, each cause said once (without the hint).
    pub message: String,
    /// The file or directory the error is about, or null.
    pub path: Option<String>,
}
