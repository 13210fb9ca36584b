//! `verify`: check a dataset or checkpoint for damage.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Dataset directory, or a single shard file
    pub path: PathBuf,

    /// Manifest to check against instead of PATH/manifest.json
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,

    /// The manifest's root digest must be HEX (64 hex digits): catches a replaced manifest
    ///
    /// Record the root printed by `pack` or `manifest` (or `jq -r .root_sha256
    /// manifest.json`) somewhere the data cannot change it, e.g. the training config.
    #[arg(long, value_name = "HEX", value_parser = parse_root)]
    pub expect_root: Option<String>,

    /// Also count NaN and Inf in every float tensor of a checkpoint (bf16 and fp8 included)
    ///
    /// NaN is an error (training resumed from it produces NaN loss), ±Inf a warning
    /// (masks hold it legitimately). The scan runs in the same single read. Example:
    /// `shardsmith verify ckpt/step_4000 --scan-values`.
    #[arg(long)]
    pub scan_values: bool,

    /// Also check this OpenSSF Model Signing bundle (needs --public-key)
    ///
    /// The bundle's signature is checked with the key, then every file's SHA-256 (from
    /// the same read as the other checks) against the digests it signs: a changed,
    /// added or removed file, a wrong key or an altered bundle is a finding (exit 1).
    /// Bundles from `model_signing sign key` and `shardsmith sign` are both accepted.
    /// Example: `shardsmith verify ckpt --signature ckpt.sig --public-key key.pub`.
    #[arg(long, value_name = "FILE", requires = "public_key")]
    pub signature: Option<PathBuf>,

    /// Public key (PEM, P-256/P-384/P-521) the --signature must be made with
    #[arg(
        long,
        alias = "public_key",
        value_name = "KEY.pub",
        requires = "signature"
    )]
    pub public_key: Option<PathBuf>,

    /// Accept a path with nothing to verify instead of reporting it (exit 1)
    ///
    /// Without it, an empty directory, or one with no manifest, no SHA256SUMS and no
    /// file of a format shardsmith checks (a failed download, a folder of source code),
    /// is a `nothing_to_verify` finding: a pre-training check must not pass on nothing.
    /// Example: `shardsmith verify scratch/ --allow-empty` in a job that may find none.
    #[arg(long)]
    pub allow_empty: bool,
}

/// `--expect-root` that is not a root digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a root digest is 64 hex digits (the manifest's root_sha256)")]
pub struct NotARoot;

/// A root digest, lower-cased.
pub fn parse_root(text: &str) -> Result<String, NotARoot> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err(NotARoot)
    }
}
