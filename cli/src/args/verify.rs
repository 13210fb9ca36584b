//! `verify`: check a dataset or checkpoint for damage.

use std::path::PathBuf;

use clap::Args;

use crate::size::{BadNumber, parse_size};

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

    /// Check only bytes START..END of FILE, by its chunk digests (repeatable)
    ///
    /// FILE is relative to PATH, as the manifest lists it; START and END take sizes as
    /// the other size flags do (`1GiB`, `500MB`, `4096`); `..END` starts at 0, `START..`
    /// runs to the end of the file. Only the 64 MiB chunks the range overlaps are read
    /// (on every core) and compared with the SHA-256s the manifest lists for files of
    /// 1 GiB or more; no other file, chunk or check is read. The summary and `--json`
    /// (`partial`) say which bytes were checked. A file without chunk digests, or a
    /// range past its end, is refused (exit 2); so are --scan-values and --signature,
    /// which need whole files. Example: after a restore of a lost storage target,
    /// `shardsmith verify ckpt --range model-00001.safetensors:1GiB..2GiB`.
    #[arg(long = "range", value_name = "FILE:START..END", value_parser = parse_range)]
    pub range: Vec<RangeArg>,
}

/// One `--range FILE:START..END` as given: the file and the bounds it names (`None`
/// for an open end), and the text, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeArg {
    pub file: String,
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub text: String,
}

/// `--range` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRange {
    /// No `:` between the file and the bytes.
    #[error("`{0}` is not FILE:START..END (e.g. model.bin:1GiB..2GiB)")]
    Form(String),
    /// A bound that is not a size.
    #[error("the {which} of `{text}`: {why}")]
    Size {
        which: &'static str,
        text: String,
        why: BadNumber,
    },
}

/// Parses `FILE:START..END` (the last `:` separates the file; either bound may be
/// left out).
pub fn parse_range(text: &str) -> Result<RangeArg, BadRange> {
    let form = || BadRange::Form(text.to_string());
    let (file, span) = text.rsplit_once(':').ok_or_else(form)?;
    let (start, end) = span.split_once("..").ok_or_else(form)?;
    if file.is_empty() {
        return Err(form());
    }
    let bound = |which: &'static str, value: &str| {
        if value.trim().is_empty() {
            return Ok(None);
        }
        parse_size(value).map(Some).map_err(|why| BadRange::Size {
            which,
            text: text.to_string(),
            why,
        })
    };
    Ok(RangeArg {
        file: file.to_string(),
        start: bound("start", start)?,
        end: bound("end", end)?,
        text: text.to_string(),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn range(text: &str) -> (String, Option<u64>, Option<u64>) {
        let r = parse_range(text).unwrap();
        assert_eq!(r.text, text);
        (r.file, r.start, r.end)
    }

    #[test]
    fn ranges_parse_with_sizes_and_open_ends() {
        let file = |s: &str| s.to_string();
        assert_eq!(
            range("model-00001.safetensors:1GiB..2GiB"),
            (
                file("model-00001.safetensors"),
                Some(1 << 30),
                Some(2 << 30)
            )
        );
        assert_eq!(
            range("a/b.bin:0..4096"),
            (file("a/b.bin"), Some(0), Some(4096))
        );
        assert_eq!(
            range("b.bin:..1.5GB"),
            (file("b.bin"), None, Some(1_500_000_000))
        );
        assert_eq!(
            range("b.bin:64MiB.."),
            (file("b.bin"), Some(64 << 20), None)
        );
        assert_eq!(range("b.bin:.."), (file("b.bin"), None, None));
        // The last `:` separates the file, so a name may hold one.
        assert_eq!(range("x:y.bin:1..2"), (file("x:y.bin"), Some(1), Some(2)));
        // Order is the settings' to check, with the manifest's size.
        assert_eq!(range("b.bin:2..1"), (file("b.bin"), Some(2), Some(1)));
    }

    #[test]
    fn malformed_ranges_say_why() {
        for bad in ["b.bin", "b.bin:1-2", ":1..2", "b.bin:12"] {
            assert_eq!(parse_range(bad), Err(BadRange::Form(bad.into())), "{bad}");
        }
        let err = parse_range("b.bin:1XB..2").unwrap_err().to_string();
        assert!(
            err.starts_with("the start of `b.bin:1XB..2`: unknown size unit"),
            "{err}"
        );
        let err = parse_range("b.bin:1..-2").unwrap_err().to_string();
        assert!(err.starts_with("the end of"), "{err}");
    }
}
