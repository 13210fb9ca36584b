//! What every shard format shares, and the registry of formats.
//!
//! A format says how big a sample will be in a shard, how shards are named, which
//! samples it cannot represent, and how to encode samples into one shard. Everything
//! else (grouping, rollover by bytes and samples, parallel writing, hashing while
//! writing, atomic commit, resume, manifest) is done once, by [`crate::pack`]. Adding a
//! format is one module implementing [`ShardFormat`] plus one arm in [`FormatKind`].

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardsmith_manifest::{FileContext, Inspector};

use crate::mds::{Encoding, Mds, MdsOptions};
use crate::parquet::{Parquet, ParquetOptions};
use crate::webdataset::{TarCompression, WebDataset};

/// One field of a sample as planned. Compact on purpose: a plan holds one of these per
/// input file, so field names are shared (`Arc<str>`) and the input path is not stored
/// but rebuilt from the key ([`SampleSpec::rel`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// Field name (lowercased extension: `jpg`, `seg.png`).
    pub ext: Arc<str>,
    /// The extension as spelled in the input file name (`JPG`).
    pub source_ext: Arc<str>,
    /// Size of the input in bytes.
    pub size: u64,
    /// Size once encoded by the format (equal to `size` unless the format converts it,
    /// e.g. text to an 8-byte integer, or an `.npy` file to an MDS array).
    pub encoded: u64,
}

impl FieldSpec {
    /// A field whose input file name spells the extension as `ext`.
    pub fn new(ext: &str, size: u64) -> Self {
        let ext: Arc<str> = Arc::from(ext);
        Self {
            ext: ext.clone(),
            source_ext: ext,
            size,
            encoded: size,
        }
    }
}

/// A sample as planned: a key and its fields, sorted by field name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleSpec {
    /// Sample key (`cat/0001`).
    pub key: String,
    /// Fields, sorted by name.
    pub fields: Vec<FieldSpec>,
    /// Where the sample comes from, for sources that need it (a Parquet row number).
    pub origin: u64,
}

/// The distinct field names of `samples`. Inserted one by one: `collect` into a set
/// would first gather and sort one entry per input file, megabytes for a few names.
pub fn field_names(samples: &[SampleSpec]) -> std::collections::BTreeSet<&str> {
    let mut names = std::collections::BTreeSet::new();
    for field in samples.iter().flat_map(|s| &s.fields) {
        names.insert(&*field.ext);
    }
    names
}

impl SampleSpec {
    /// Sum of the field sizes.
    pub fn payload(&self) -> u64 {
        self.fields.iter().map(|f| f.size).sum()
    }

    /// The input file of `field`, relative to the input root.
    pub fn rel(&self, field: &FieldSpec) -> String {
        format!("{}.{}", self.key, field.source_ext)
    }
}

/// Bytes of a field, in memory or as a stream of exactly `size` bytes.
pub enum Payload<'a> {
    /// The whole field.
    Bytes(&'a [u8]),
    /// A reader that yields exactly the field's bytes.
    Stream(&'a mut dyn Read),
}

/// A field ready to encode.
pub struct Field<'a> {
    /// Field name.
    pub ext: &'a str,
    /// Exact size.
    pub size: u64,
    /// The bytes.
    pub payload: Payload<'a>,
}

/// The output of one shard, shared by handle: encoders that must own a writer (Parquet's
/// `ArrowWriter`) keep a clone, so their bytes flow straight through the shard's
/// hashing, buffered writer instead of being collected in memory first.
#[derive(Clone)]
pub struct ShardOut {
    inner: Arc<std::sync::Mutex<dyn Write + Send>>,
}

impl ShardOut {
    /// A handle on `writer`; keep the typed `Arc` to take the writer back when done.
    pub fn new<W: Write + Send + 'static>(writer: Arc<std::sync::Mutex<W>>) -> Self {
        Self { inner: writer }
    }

    /// A handle on an in-memory buffer, and the buffer (for tests).
    #[cfg(test)]
    pub(crate) fn memory() -> (Self, Arc<std::sync::Mutex<Vec<u8>>>) {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        (Self::new(buffer.clone()), buffer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, dyn Write + Send + 'static> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Write for ShardOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.lock().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.lock().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.lock().flush()
    }
}

/// Encodes the samples of one shard. Calls come in order: `add` per sample, then
/// `finish` once. Errors are I/O errors of the output (or of a streamed input).
pub trait ShardEncoder: Send {
    /// Appends one sample.
    fn add(&mut self, out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()>;
    /// Writes whatever ends a shard (tar: the end-of-archive blocks; MDS: the whole
    /// shard, built in memory) and returns format-specific facts about it, kept with the
    /// shard's record for [`ShardFormat::dataset_files`] (MDS: its index entry).
    fn finish(&mut self, out: &mut ShardOut) -> io::Result<Value>;
}

/// The error a planned encoder returns when the shard differs from its plan.
#[derive(Debug)]
pub struct PlanBroken;

impl std::fmt::Display for PlanBroken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the shard differs from its plan")
    }
}

impl std::error::Error for PlanBroken {}

impl PlanBroken {
    /// As an I/O error (what encoders return).
    pub fn io() -> io::Error {
        io::Error::other(PlanBroken)
    }

    /// True when `e` is a [`PlanBroken`].
    pub fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<PlanBroken>())
    }
}

/// A dataset-level file a format writes after its shards (MDS `index.json`).
pub struct DatasetFile {
    /// Name inside the output directory.
    pub name: String,
    /// Content.
    pub bytes: Vec<u8>,
}

/// A shard format, configured for one dataset.
pub trait ShardFormat: Sync {
    /// Format name as recorded in manifests (`webdataset`).
    fn name(&self) -> &'static str;
    /// File name of shard `index` (`shard-000000.tar`).
    fn shard_name(&self, prefix: &str, index: usize) -> String;
    /// Why this format cannot hold `sample` (a name readers would mis-key, a field too
    /// large for the container, a missing column), or `None`.
    fn refuse(&self, sample: &SampleSpec) -> Option<String>;
    /// Leading bytes of a field this format must see to know its encoded size (0: the
    /// encoded size follows from the input size).
    fn peek_len(&self, _ext: &str) -> usize {
        0
    }
    /// Encoded size of a field of `size` input bytes whose first bytes are `head`; an
    /// error is why the field cannot be encoded.
    fn encoded_len(&self, _ext: &str, size: u64, _head: &[u8]) -> Result<u64, String> {
        Ok(size)
    }
    /// Bytes `sample` adds to a shard (exact where the format allows).
    fn sample_bytes(&self, sample: &SampleSpec) -> u64;
    /// Bytes every shard has regardless of its samples.
    fn shard_overhead(&self) -> u64;
    /// Checks the values of a loaded sample (an `int` column must hold an integer); an
    /// error is why the sample is left out.
    fn check_values(&self, _sample: &SampleSpec, _values: &[&[u8]]) -> Result<(), String> {
        Ok(())
    }
    /// Format-specific options that change the output bytes (for the manifest).
    fn options(&self) -> BTreeMap<String, Value> {
        BTreeMap::new()
    }
    /// A fresh encoder for one shard.
    fn encoder(&self) -> Box<dyn ShardEncoder>;
    /// An encoder that may rely on the shard's plan (every sample added, in order, with
    /// its planned size) to stream instead of buffering. When the plan does not hold (a
    /// sample was left out, a file changed), it fails with [`PlanBroken`] and the shard is
    /// written again with [`ShardFormat::encoder`].
    fn planned_encoder(&self, _planned: &[SampleSpec]) -> Box<dyn ShardEncoder> {
        self.encoder()
    }
    /// Files written after every shard, from the shards' names and facts in order.
    fn dataset_files(&self, _shards: &[(&str, &Value)]) -> Result<Vec<DatasetFile>, String> {
        Ok(Vec::new())
    }
}

/// The shard formats `pack` can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatKind {
    /// WebDataset tar shards (`PREFIX-NNNNNN.tar`, or `.tar.gz`/`.tar.zst` compressed).
    Webdataset,
    /// MosaicML Streaming shards (`shard.NNNNN.mds[.EXT]` + `index.json`).
    Mds,
    /// Parquet files (`PREFIX-NNNNNN.parquet`).
    Parquet,
}

impl FormatKind {
    /// Every format, for content sniffing.
    pub fn all() -> &'static [FormatKind] {
        &[FormatKind::Webdataset, FormatKind::Mds, FormatKind::Parquet]
    }

    /// The name recorded in manifests.
    pub fn name(self) -> &'static str {
        match self {
            FormatKind::Webdataset => "webdataset",
            FormatKind::Mds => "mds",
            FormatKind::Parquet => "parquet",
        }
    }

    /// A structural checker for a file of this format.
    pub fn inspector(self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        match self {
            FormatKind::Webdataset => Box::new(crate::webdataset::ShardInspector::new(ctx.path)),
            FormatKind::Mds => Box::new(crate::mds::MdsInspector::new(ctx.path)),
            FormatKind::Parquet => Box::new(crate::parquet::ParquetInspector::new(ctx)),
        }
    }
}

/// Everything needed to configure a format for a dataset: the kind and its options.
#[derive(Clone, Debug)]
pub struct FormatChoice {
    /// Which format.
    pub kind: FormatKind,
    /// Column encodings by field name (MDS), overriding the defaults.
    pub columns: BTreeMap<String, Encoding>,
    /// Name of the column holding the sample key (MDS, Parquet).
    pub key_column: String,
    /// MDS options.
    pub mds: MdsOptions,
    /// Parquet options.
    pub parquet: ParquetOptions,
    /// Compression of WebDataset shards (`None`: plain `.tar`).
    pub webdataset: Option<TarCompression>,
    /// Shard size limit, which MDS records as its `size_limit`.
    pub shard_size: u64,
}

impl FormatChoice {
    /// A choice of `kind` with default options.
    pub fn new(kind: FormatKind) -> Self {
        Self {
            kind,
            columns: BTreeMap::new(),
            key_column: "key".into(),
            mds: MdsOptions::default(),
            parquet: ParquetOptions::default(),
            webdataset: None,
            shard_size: 256 << 20,
        }
    }

    /// The format configured for `samples` (MDS and Parquet derive their columns from
    /// the fields the samples have).
    pub fn build(&self, samples: &[SampleSpec]) -> crate::Result<Box<dyn ShardFormat>> {
        Ok(match self.kind {
            FormatKind::Webdataset => Box::new(WebDataset {
                compression: self.webdataset,
            }),
            FormatKind::Parquet => Box::new(Parquet::new(
                &self.parquet,
                &self.columns,
                &self.key_column,
                samples,
            )?),
            FormatKind::Mds => Box::new(Mds::new(
                &self.mds,
                &self.columns,
                &self.key_column,
                self.shard_size,
                samples,
            )?),
        })
    }
}
