//! `sign --json`: one report when the files were signed, another when the checks
//! before signing found problems.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_manifest::Finding;

use super::sorted::sorted;

/// What `sign --json` prints when the bundle was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Sign {
    /// Bytes read and verified before signing, or null with `--no-checks`.
    pub bytes_checked: Option<u64>,
    /// Always `sign`.
    pub command: &'static str,
    /// The key's curve (`P-256`, `P-384`, `P-521`).
    pub curve: &'static str,
    /// Number of files the signature covers (an empty file has no shard, so with
    /// `--shard-size` it is not counted).
    pub files: usize,
    /// The key's hint (model_signing's): SHA-256 of its public key PEM, lowercase hex.
    pub key_hint: String,
    /// The path signed, as given.
    pub path: String,
    /// Wall-clock seconds the command took.
    pub seconds: f64,
    /// With `--shard-size`: the shard size in bytes (model_signing's shard
    /// serialization); null for one digest per file.
    pub shard_size: Option<u64>,
    /// With `--shard-size`: the shards the signature lists; null without.
    pub shards: Option<usize>,
    /// The signature bundle written, as given.
    pub signature: String,
    /// Always true here.
    pub signed: bool,
    /// The statement's subject digest: SHA-256 over every signed file's (or shard's)
    /// SHA-256, in path-component order (a file's shards by offset).
    pub subject_sha256: String,
    /// The version of shardsmith.
    pub version: &'static str,
}

/// What `sign --json` prints when verification before signing found problems (exit 1,
/// nothing signed).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SignRefused<'a> {
    /// Always `sign`.
    pub command: &'static str,
    /// Number of error-severity findings.
    pub errors: usize,
    /// Everything verification found, as `verify --json` reports it.
    #[serde(serialize_with = "sorted")]
    pub findings: &'a [Finding],
    /// The path that was to be signed, as given.
    pub path: String,
    /// Always false here.
    pub signed: bool,
    /// The version of shardsmith.
    pub version: &'static str,
}
