//! `sign`: sign a dataset or checkpoint (OpenSSF Model Signing bundle, key pair).

use std::path::PathBuf;

use clap::Args;

use crate::size::{BadNumber, parse_size};

#[derive(Debug, Args)]
pub struct SignArgs {
    /// Directory (or single file) to sign
    pub path: PathBuf,

    /// Private key (PEM: SEC1 `EC PRIVATE KEY` or PKCS#8, on P-256, P-384 or P-521)
    ///
    /// Encrypted keys are not read; model_signing's own --password does not work either.
    /// Example: `--private-key key.pem` (model_signing's `--private_key` also works).
    #[arg(long, alias = "private_key", value_name = "KEY.pem")]
    pub private_key: PathBuf,

    /// Where to write the bundle [default: model.sig, as model_signing]
    ///
    /// Written under a temporary name and renamed when complete. Inside PATH it is left
    /// out of what it signs. Example: `--signature step_4000.sig`.
    #[arg(long, value_name = "FILE", default_value = "model.sig")]
    pub signature: PathBuf,

    /// Sign symlinks to files, as their targets' content under the links' names
    ///
    /// Without it a symlink is refused, as model_signing refuses it; symlinks to
    /// directories are never followed. model_signing's `--allow_symlinks` also works.
    #[arg(long, alias = "allow_symlinks")]
    pub allow_symlinks: bool,

    /// Sign the files as they are, without the manifest and structure checks
    #[arg(long)]
    pub no_checks: bool,

    /// Sign every shard of SIZE bytes of each file (model_signing's shard serialization)
    ///
    /// Every non-empty file is cut into [0,SIZE), [SIZE,2*SIZE), ... (the last one short)
    /// and each shard is hashed on a core of its own, so a few huge files (a 500 GB
    /// checkpoint) sign and verify on every core; the bundle lists each shard as
    /// `path:start:end` (method `shards`, algorithm `sha256-sharded-SIZE`). model_signing's
    /// Python API verifies it; its CLI (1.1.1) verifies one digest per file only. With the
    /// checks, files are read twice (the checks, then the shards); --no-checks reads them
    /// once. Units: k/M/G x1000, Ki/Mi/Gi x1024; model_signing's default is 1GB.
    /// Example: `--shard-size 1GB`.
    #[arg(long, value_name = "SIZE", value_parser = parse_shard_size)]
    pub shard_size: Option<u64>,
}

/// Why `--shard-size` cannot be used; the text clap shows after the flag.
#[derive(Debug, thiserror::Error)]
pub enum BadShardSize {
    /// Not a size.
    #[error(transparent)]
    Size(#[from] BadNumber),
    /// A size of 0.
    #[error("a shard holds at least 1 byte")]
    Zero,
}

/// `--shard-size`: a size as every size flag takes it, at least 1 byte.
pub fn parse_shard_size(text: &str) -> Result<u64, BadShardSize> {
    match parse_size(text)? {
        0 => Err(BadShardSize::Zero),
        n => Ok(n),
    }
}
