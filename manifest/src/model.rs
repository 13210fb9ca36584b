use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::chunks::{ChunkDigests, ChunkPolicy};
use crate::digest::FileDigest;
use crate::hex::hex;
use crate::{Error, Result};

/// File name of the manifest inside a dataset directory.
pub const MANIFEST_FILE: &str = "manifest.json";
/// File name of the coreutils-compatible checksum list beside the manifest.
pub const SUMS_FILE: &str = "SHA256SUMS";
/// Version of the manifest schema this crate writes.
pub const MANIFEST_VERSION: u32 = 1;

/// What produced a manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestKind {
    /// `shardsmith pack`: the files are shards shardsmith wrote.
    Pack,
    /// `shardsmith manifest`: an existing directory of files, hashed as found.
    Directory,
    /// `shardsmith tokenize`: binary token files shardsmith wrote.
    Tokenize,
}

/// A dataset manifest (`manifest.json`). See the README for the schema.
///
/// The `root_sha256` is the SHA-256 of the manifest's canonical JSON without that
/// field ([`canonical_json`]); pinning it pins every file's digest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Schema version ([`MANIFEST_VERSION`]).
    pub manifest_version: u32,
    /// Always `shardsmith`.
    pub tool: String,
    /// Version of the shardsmith that wrote it.
    pub tool_version: String,
    /// What produced it.
    pub kind: ManifestKind,
    /// Shard format, for `pack` manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The options that determine the output bytes (never `--jobs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, Value>,
    /// What was read, for `pack` manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<InputSummary>,
    /// Chunk size of every file's `chunk_crc32`.
    pub chunk_size: u64,
    /// Which files have a list of chunk SHA-256s (`chunks`), and how it is taken;
    /// absent from manifests older than chunk lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_digests: Option<ChunkPolicy>,
    /// Every file of the dataset, in order (shard order for `pack`, path order otherwise).
    pub files: Vec<FileEntry>,
    /// Sums over `files`.
    pub totals: Totals,
    /// Inputs that were left out, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// How many inputs were left out in all, when `skipped` lists only the first ones
    /// (`tokenize` counts malformed records, which can be many).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_total: Option<u64>,
    /// Samples or documents left out because their content equals an earlier one's
    /// (`--dedup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<Duplicates>,
    /// SHA-256 of the canonical manifest without this field.
    #[serde(default)]
    pub root_sha256: String,
}

/// What a `pack` read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputSummary {
    /// Input files packed (skipped ones excluded).
    pub files: u64,
    /// Their total size.
    pub bytes: u64,
    /// SHA-256 over `path NUL size LF` of every packed input file in sample order:
    /// identifies the input selection without storing it.
    pub listing_sha256: String,
}

/// One file of a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the dataset directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256, lowercase hex.
    pub sha256: String,
    /// CRC-32 of each `chunk_size` chunk, 8 hex digits per chunk.
    pub chunk_crc32: String,
    /// SHA-256 of each chunk, for files of at least the manifest's
    /// `chunk_digests.threshold` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<ChunkDigests>,
    /// Format recognised in the file (`webdataset`, ...), when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Samples in the file, when it is a shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Key of the first sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_key: Option<String>,
    /// Key of the last sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_key: Option<String>,
    /// Documents in a token file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<u64>,
    /// Tokens in a token file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Every tensor of a checkpoint file, with the digest of its canonical form
    /// (`manifest --tensors`; for DCP, on the `.metadata` entry).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensors: Vec<TensorRecord>,
}

/// One tensor of a checkpoint file, as `manifest --tensors` records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorRecord {
    /// Name (`model.layers.0.weight`).
    pub name: String,
    /// Element type, safetensors spelling (`F32`, `BF16`).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// SHA-256 of the canonical form: the elements in row-major order, contiguous,
    /// little-endian.
    pub sha256: String,
}

impl FileEntry {
    /// An entry for `path` with `digest` and no format details.
    pub fn new(path: impl Into<String>, digest: &FileDigest) -> Self {
        Self {
            path: path.into(),
            size: digest.size,
            sha256: digest.sha256_hex(),
            chunk_crc32: digest.chunks_hex(),
            chunks: digest.sharded.clone(),
            format: None,
            samples: None,
            first_key: None,
            last_key: None,
            documents: None,
            tokens: None,
            tensors: Vec::new(),
        }
    }
}

/// Sums over a manifest's files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Number of files.
    pub files: u64,
    /// Total bytes.
    pub bytes: u64,
    /// Total samples, when the files are shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Total documents, when the files are token files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documents: Option<u64>,
    /// Total tokens, when the files are token files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

/// An input that was left out.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Skipped {
    /// Path relative to the input root.
    pub path: String,
    /// Why it was left out.
    pub reason: String,
}

/// The most duplicates a manifest lists ([`Duplicates::first`]); the count covers all.
pub const MAX_LISTED_DUPLICATES: usize = 1000;

/// What `--dedup` left out: every sample (or document) whose content, byte for byte,
/// equals an earlier one's in input order; the first occurrence is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Duplicates {
    /// How many were left out.
    pub count: u64,
    /// Their size: the samples' field bytes, or the documents' text bytes.
    pub bytes: u64,
    /// The first [`MAX_LISTED_DUPLICATES`] of them, in input order.
    pub first: Vec<Duplicate>,
}

impl Duplicates {
    /// True when nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds one left-out item of `bytes` (listed while the list has room).
    pub fn add(&mut self, duplicate: Duplicate, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        if self.first.len() < MAX_LISTED_DUPLICATES {
            self.first.push(duplicate);
        }
    }

    /// Adds every item of `other`, which comes after this one's in input order.
    pub fn extend(&mut self, other: Duplicates) {
        self.count += other.count;
        self.bytes += other.bytes;
        let room = MAX_LISTED_DUPLICATES.saturating_sub(self.first.len());
        self.first.extend(other.first.into_iter().take(room));
    }
}

/// One item `--dedup` left out, and the kept item it duplicates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Duplicate {
    /// The left-out sample's key (a document's place: `FILE:LINE` or `FILE#ROW`).
    pub key: String,
    /// The key (or place) of the first item with the same content, which was kept.
    pub of: String,
}

impl Manifest {
    /// A new manifest of `kind` written by this version, with `files`; totals are
    /// computed, the root digest is not (call [`Manifest::seal`]).
    pub fn new(kind: ManifestKind, chunk_size: u64, files: Vec<FileEntry>) -> Self {
        let mut manifest = Self {
            manifest_version: MANIFEST_VERSION,
            tool: "shardsmith".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            kind,
            format: None,
            options: BTreeMap::new(),
            input: None,
            chunk_size,
            chunk_digests: Some(ChunkPolicy::default()),
            files,
            totals: Totals::default(),
            skipped: Vec::new(),
            skipped_total: None,
            duplicates: None,
            root_sha256: String::new(),
        };
        manifest.recount();
        manifest
    }

    /// Recomputes `totals` from `files` (samples summed over the files that have them:
    /// shards, not an index beside them).
    pub fn recount(&mut self) {
        let sum = |field: fn(&FileEntry) -> Option<u64>| {
            let values: Vec<u64> = self.files.iter().filter_map(field).collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        self.totals = Totals {
            files: self.files.len() as u64,
            bytes: self.files.iter().map(|f| f.size).sum(),
            samples: sum(|f| f.samples),
            documents: sum(|f| f.documents),
            tokens: sum(|f| f.tokens),
        };
    }

    /// Computes and stores `root_sha256`.
    pub fn seal(&mut self) {
        self.root_sha256.clear();
        let value = serde_json::to_value(&*self).expect("a manifest always serializes");
        self.root_sha256 = root_digest(&value);
    }

    /// The manifest as written to disk: pretty JSON with a final newline.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a manifest always serializes");
        out.push(b'\n');
        out
    }

    /// Parses manifest bytes; also returns the raw JSON value (for the root digest,
    /// which must cover fields this version does not know).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<(Self, Value)> {
        let bad = |reason: String| Error::BadManifest {
            path: path.to_path_buf(),
            reason,
        };
        let value: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if let Some(reason) = foreign(&value) {
            return Err(Error::ForeignManifest {
                path: path.to_path_buf(),
                reason,
            });
        }
        let manifest: Manifest =
            serde_json::from_value(value.clone()).map_err(|e| bad(e.to_string()))?;
        if manifest.manifest_version > MANIFEST_VERSION {
            return Err(bad(format!(
                "schema version {} is newer than this shardsmith understands ({MANIFEST_VERSION})",
                manifest.manifest_version
            )));
        }
        // verify keeps a CRC-32 per chunk of every file it reads: a tiny chunk size
        // from the manifest would make that grow with the data (4 bytes per byte).
        if manifest.chunk_size < MIN_CHUNK_SIZE {
            return Err(bad(format!(
                "chunk_size {} is below {MIN_CHUNK_SIZE} bytes (shardsmith writes {})",
                manifest.chunk_size,
                crate::DEFAULT_CHUNK_SIZE
            )));
        }
        for entry in &manifest.files {
            if !is_safe_relative(&entry.path) {
                return Err(bad(format!(
                    "file path `{}` is not a plain relative path",
                    entry.path
                )));
            }
        }
        Ok((manifest, value))
    }

    /// Reads and parses the manifest at `path`.
    pub fn load(path: &Path) -> Result<(Self, Value)> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("reading", path, e))?;
        Self::parse(&bytes, path)
    }
}

/// Smallest `chunk_size` a manifest may have.
const MIN_CHUNK_SIZE: u64 = 4096;

/// Why a JSON value is not a shardsmith manifest at all (rather than a damaged one):
/// every manifest of ours is an object with `"tool": "shardsmith"`.
fn foreign(value: &Value) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some("it holds JSON that is not an object".into());
    };
    if object.get("tool").and_then(Value::as_str) == Some("shardsmith") {
        return None;
    }
    let mut keys: Vec<&str> = object.keys().map(String::as_str).take(6).collect();
    if object.len() > keys.len() {
        keys.push("...");
    }
    Some(format!(
        "it has no `\"tool\": \"shardsmith\"` member; its keys: {}",
        if keys.is_empty() {
            "none".to_string()
        } else {
            keys.join(", ")
        }
    ))
}

/// True for `a/b/c` paths: relative, no `.`/`..`/empty components, no backslash or NUL.
pub(crate) fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains(['\\', '\0'])
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// The root digest of a manifest value: SHA-256 of its [`canonical_json`] with the
/// `root_sha256` member removed.
///
/// Equivalent Python: `sha256(json.dumps(m, sort_keys=True, separators=(",", ":"),
/// ensure_ascii=False).encode())` where `m` is the manifest without `root_sha256`.
pub fn root_digest(manifest: &Value) -> String {
    let mut value = manifest.clone();
    if let Value::Object(map) = &mut value {
        map.remove("root_sha256");
    }
    let mut out = Vec::new();
    canonical_json(&value, &mut out);
    hex(&Sha256::digest(&out))
}

/// Canonical JSON: object keys sorted by code point, no insignificant whitespace,
/// strings escaped as JSON requires and nothing more (non-ASCII kept as UTF-8).
pub fn canonical_json(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical_json(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, key).expect("writing to a Vec cannot fail");
                out.push(b':');
                canonical_json(&map[key], out);
            }
            out.push(b'}');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("writing to a Vec cannot fail"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Digester;

    fn sample() -> Manifest {
        let mut d = Digester::new(1 << 20);
        d.update(b"shard bytes");
        let mut entry = FileEntry::new("shard-000000.tar", &d.finish());
        entry.samples = Some(3);
        let mut m = Manifest::new(ManifestKind::Pack, 1 << 20, vec![entry]);
        m.format = Some("webdataset".into());
        m.options.insert("zeta".into(), Value::from(1));
        m.options.insert("alpha".into(), Value::from("é\n\u{1}"));
        m.seal();
        m
    }

    #[test]
    fn canonical_json_sorts_keys_and_escapes_like_python() {
        let value: Value =
            serde_json::from_str(r#"{"b":[1,{"d":null,"c":true}],"a":"é\n\u0001\""}"#).unwrap();
        let mut out = Vec::new();
        canonical_json(&value, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"a\":\"é\\n\\u0001\\\"\",\"b\":[1,{\"c\":true,\"d\":null}]}"
        );
    }

    #[test]
    fn root_digest_round_trips_and_detects_edits() {
        let m = sample();
        let bytes = m.to_json_bytes();
        let (parsed, value) = Manifest::parse(&bytes, Path::new("m.json")).unwrap();
        assert_eq!(parsed, m);
        assert_eq!(root_digest(&value), m.root_sha256);
        let edited = String::from_utf8(bytes)
            .unwrap()
            .replace("\"samples\": 3", "\"samples\": 4");
        let (_, value) = Manifest::parse(edited.as_bytes(), Path::new("m.json")).unwrap();
        assert_ne!(root_digest(&value), m.root_sha256);
    }

    #[test]
    fn unknown_fields_are_covered_by_the_root() {
        let m = sample();
        let mut value = serde_json::to_value(&m).unwrap();
        value["future_field"] = Value::from(7);
        assert_ne!(root_digest(&value), m.root_sha256);
    }

    #[test]
    fn totals_count_samples_of_the_files_that_have_them() {
        let m = sample();
        assert_eq!(m.totals.samples, Some(3));
        let mut d = Digester::new(1 << 20);
        d.update(b"x");
        let m = Manifest::new(
            ManifestKind::Directory,
            1 << 20,
            vec![FileEntry::new("x", &d.finish())],
        );
        assert_eq!(m.totals.samples, None);
        assert_eq!(m.totals.bytes, 1);
    }

    /// A manifest's chunk size sets how many CRC-32s verify keeps per file: one per
    /// byte (or 0, a division by zero) must not be accepted from a file.
    #[test]
    fn tiny_chunk_sizes_are_rejected() {
        for chunk_size in [0, 1, 4095] {
            let mut m = sample();
            m.chunk_size = chunk_size;
            let err = Manifest::parse(&m.to_json_bytes(), Path::new("m")).unwrap_err();
            assert!(err.to_string().contains("is below 4096 bytes"), "{err}");
        }
    }

    #[test]
    fn hostile_paths_are_rejected() {
        for path in ["../x", "/etc/passwd", "a//b", "a/./b", "", "a\\b"] {
            let mut m = sample();
            m.files[0].path = path.into();
            let err = Manifest::parse(&m.to_json_bytes(), Path::new("m")).unwrap_err();
            assert!(
                err.to_string().contains("plain relative path"),
                "{path}: {err}"
            );
        }
    }
}
