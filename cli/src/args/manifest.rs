//! `manifest`: a SHA-256 manifest of an existing directory.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// Directory to describe
    pub dir: PathBuf,

    /// Write the manifest to FILE instead of DIR/manifest.json (no SHA256SUMS is written then)
    ///
    /// Useful for read-only datasets; verify with `shardsmith verify DIR --manifest FILE`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace an existing manifest
    #[arg(long)]
    pub force: bool,

    /// Also record every tensor of every checkpoint file: name, dtype, shape, SHA-256
    ///
    /// The digest is of the tensor's canonical form (its elements row-major,
    /// contiguous, little-endian), the same whatever the container: a `.pt` and its
    /// safetensors conversion record the same digests. `verify` then names the tensors
    /// that changed in a file whose bytes changed; `diff` compares checkpoints directly.
    /// Reads the checkpoint files a second time (their tensor data).
    ///
    /// Example: shardsmith manifest ./checkpoints/step_4000 --tensors
    #[arg(long)]
    pub tensors: bool,

    /// Describe a directory that holds an unfinished pack or tokenize run, as it is
    ///
    /// Without it, a directory with a run's state and no manifest is refused: a
    /// manifest of part of a dataset would pass it off as the whole, and the run could
    /// no longer resume. Finish the run instead (re-run the same command).
    /// Example: `--accept-unfinished`.
    #[arg(long)]
    pub accept_unfinished: bool,
}
