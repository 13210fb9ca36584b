use std::fmt;

use serde::Serialize;

/// What kind of problem a [`Finding`] is. Serialized in snake_case; the names are part
/// of the `--json` interface and stay stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FindingKind {
    /// A file the manifest lists is not there.
    MissingFile,
    /// A file is there that the manifest does not list.
    UnlistedFile,
    /// A temporary file of an interrupted shardsmith run.
    LeftoverTempFile,
    /// The state of a `pack` or `tokenize` run and no manifest: the run was killed,
    /// failed or is still running, and the files are part of a dataset.
    UnfinishedRun,
    /// Size differs from the manifest.
    SizeMismatch,
    /// SHA-256 differs from the manifest.
    HashMismatch,
    /// The manifest itself cannot be parsed or is inconsistent.
    ManifestInvalid,
    /// The manifest's root digest does not match its content or the pinned value.
    RootMismatch,
    /// `SHA256SUMS` disagrees with the manifest.
    SumsMismatch,
    /// A file could not be read.
    UnreadableFile,
    /// The file ends before its structure says it should.
    Truncated,
    /// A header is malformed (bad checksum, bad number field, ...).
    BadHeader,
    /// The archive has no end-of-archive marker.
    MissingEndMarker,
    /// Non-zero bytes after the end of the archive.
    TrailingData,
    /// The archive ends early: a zero block where a header belongs, data after it.
    PrematureEnd,
    /// A member readers ignore (directory, link, device) or misread (long-name records).
    NonRegularMember,
    /// A member name readers mis-key (over 100 bytes, ustar prefix, long-name record).
    LongName,
    /// A member name that is not valid UTF-8 or that readers split differently.
    BadName,
    /// A member without an extension: webdataset drops it.
    NoExtension,
    /// Two members of one sample map to the same field.
    DuplicateField,
    /// Files of one sample are not contiguous: readers see two samples.
    SplitSample,
    /// Sample count differs from the manifest.
    SampleCountMismatch,
    /// First or last sample key differs from the manifest.
    KeyMismatch,
    /// A dataset index (MDS `index.json`) cannot be read or has the wrong shape.
    IndexInvalid,
    /// A dataset index (MDS `index.json`, a sharded safetensors index) disagrees with a
    /// shard it lists (size, samples, hashes, config, tensors).
    IndexMismatch,
    /// A record inside a shard is inconsistent with the shard's own layout.
    BadRecord,
    /// A compressed shard does not decompress.
    DecompressionFailed,
    /// Data pages that do not decode (Parquet).
    Undecodable,
    /// Part of a file shardsmith cannot check though readers may read it (an encrypted
    /// Parquet file, a page over what it decodes at once): a warning, never damage.
    NotChecked,
    /// A zip member's CRC-32 differs from its central directory: bytes changed.
    CrcMismatch,
    /// A zip checkpoint saved without CRC-32s: damage cannot be detected.
    CrcNotRecorded,
    /// Storage records saved as placeholders (`skip_data()`): values never written.
    PlaceholderData,
    /// A run of zero bytes inside float tensor data that is not zero elsewhere.
    ZeroRun,
    /// A filesystem hole (never-written bytes) inside tensor data.
    Hole,
    /// NaN values in a float tensor (`--scan-values`).
    NanValues,
    /// Infinite values in a float tensor (`--scan-values`).
    InfValues,
    /// The file holds something else entirely: a Git LFS pointer, an HTML page, nothing.
    WrongContent,
    /// A pickle imports globals that would run code when loaded.
    UnsafePickle,
    /// A pickle cannot be read.
    BadPickle,
    /// A tensor's declared dtype, shape, offsets or storage disagree with the data.
    BadTensor,
    /// Byte ranges that overlap or leave gaps where the format forbids it.
    BadLayout,
    /// A tensor's dtype, shape or digest differs from the manifest (`manifest
    /// --tensors`), or a recorded tensor is gone.
    TensorMismatch,
    /// A dtype this reader does not know (a newer writer).
    UnsupportedDtype,
    /// Bytes stored through a transform this reader does not know (a DCP item's
    /// `transform_descriptors`), or that cannot be delimited: named, not checked, never
    /// called damage.
    UnsupportedTransform,
    /// A legacy format without checksums.
    LegacyFormat,
    /// Saved on a big-endian machine.
    ForeignByteOrder,
    /// A file a checkpoint's own metadata does not reference (an earlier save's).
    StaleFile,
    /// A pointer file (`latest`, tracker) names a missing or broken checkpoint.
    BadPointer,
    /// A checkpoint directory without the files a complete save leaves.
    IncompleteSave,
    /// A token index (Megatron `.idx`) contradicts itself or its `.bin`: pointers that
    /// are not the running sum of the lengths, document boundaries out of order.
    BadIndex,
    /// A token id at or above the vocabulary size.
    TokenOutOfRange,
    /// End-of-document tokens missing, misplaced or too many.
    EodMismatch,
    /// A token file holds a different number of documents or tokens than recorded.
    TokenCountMismatch,
    /// Nothing could be checked: no file, or no recorded digest and no file of a known
    /// format.
    NothingToVerify,
    /// A signature bundle that does not verify: malformed, made with another key, or
    /// its signature does not match its content.
    SignatureInvalid,
    /// A file the signature does not cover (added after signing).
    UnsignedFile,
    /// A file the signature covers is not there.
    SignedFileMissing,
    /// A file's SHA-256 differs from the one the signature covers.
    SignedDigestMismatch,
}

impl FindingKind {
    /// The snake_case name used in reports.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// How serious a finding is: errors make `verify` exit 1, warnings do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The data is not whole, or readers will misread it.
    Error,
    /// Worth knowing; readers still get the data.
    Warning,
}

/// One problem found in a dataset: data, not an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// Error or warning.
    pub severity: Severity,
    /// File, relative to the checked directory.
    pub path: String,
    /// Byte offset where the problem starts, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Byte offset where the affected range ends (exclusive), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
    /// Expected value, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// Actual value, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    /// One-line explanation.
    pub message: String,
}

impl Finding {
    /// An error-severity finding.
    pub fn error(kind: FindingKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind,
            severity: Severity::Error,
            path: path.into(),
            offset: None,
            end: None,
            expected: None,
            actual: None,
            message: message.into(),
        }
    }

    /// A warning-severity finding.
    pub fn warning(kind: FindingKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(kind, path, message)
        }
    }

    /// Sets the byte offset.
    pub fn at(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Sets the affected byte range.
    pub fn range(mut self, start: u64, end: u64) -> Self {
        self.offset = Some(start);
        self.end = Some(end);
        self
    }

    /// Sets expected and actual values.
    pub fn values(mut self, expected: impl ToString, actual: impl ToString) -> Self {
        self.expected = Some(expected.to_string());
        self.actual = Some(actual.to_string());
        self
    }

    /// True for error severity.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind.name())?;
        match (self.offset, self.end) {
            (Some(start), Some(end)) => write!(f, " at bytes {start}..{end}")?,
            (Some(start), None) => write!(f, " at byte {start}")?,
            _ => {}
        }
        write!(f, ": {}", self.message)?;
        if let (Some(expected), Some(actual)) = (&self.expected, &self.actual) {
            write!(f, " (expected {expected}, found {actual})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_kind_and_offset() {
        let f = Finding::error(
            FindingKind::Truncated,
            "shard-000001.tar",
            "member ends early",
        )
        .at(1024)
        .values(4096, 2048);
        assert_eq!(
            f.to_string(),
            "shard-000001.tar: truncated at byte 1024: member ends early (expected 4096, found 2048)"
        );
        assert_eq!(FindingKind::LeftoverTempFile.name(), "leftover_temp_file");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(json["kind"], "truncated");
        assert_eq!(json["severity"], "error");
        assert!(json.get("end").is_none());
    }
}
