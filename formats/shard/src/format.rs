//! What every shard format implements: [`ShardFormat`] and the encoder of one shard.
//!
//! A format says how big a sample will be in a shard, how shards are named, which
//! samples it cannot represent, and how to encode samples into one shard. Everything
//! else (grouping, rollover by bytes and samples, parallel writing, hashing while
//! writing, atomic commit, resume, manifest) is done once, by the pack pipeline. The
//! list of formats is [`crate::registry`], above the formats.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use serde_json::Value;

use crate::columns::{Encoding, ValueError};
use crate::sample::SampleSpec;

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

/// A value of a loaded sample that its column cannot store
/// ([`ShardFormat::check_values`]); the text completes "sample `key`: ...".
#[derive(Debug)]
pub struct BadValue {
    /// The field.
    pub field: String,
    /// What is wrong with its value.
    pub error: ValueError,
    /// The column's encoding, where the message names it.
    pub encoding: Option<Encoding>,
}

impl BadValue {
    /// `field`'s value cannot be stored: `error`; `encoding` is named when given.
    pub fn new(field: &str, error: ValueError, encoding: Option<&Encoding>) -> Self {
        Self {
            field: field.to_string(),
            error,
            encoding: encoding.cloned(),
        }
    }
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "field `{}` {}", self.field, self.error)?;
        match &self.encoding {
            Some(encoding) => write!(f, " (column encoding {encoding})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for BadValue {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Why the dataset files cannot be written ([`ShardFormat::dataset_files`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetFilesError {
    /// The recorded writer config names a compression that is none.
    #[error(transparent)]
    Compression(#[from] crate::mds::CompressionError),
    /// A shard has no facts of this format.
    #[error("no record of shard `{0}` (written by another format?)")]
    NoRecord(String),
    /// Separately packed parts cannot be one dataset (their schemas differ, a file is
    /// not what it should be).
    #[error("{0}")]
    Parts(String),
    /// Energon's index cannot be built (two samples with one key).
    #[error(transparent)]
    Energon(#[from] crate::webdataset::readers::SqliteError),
}

/// A dataset-level file a format writes after its shards (MDS `index.json`).
pub struct DatasetFile {
    /// Name inside the output directory.
    pub name: String,
    /// Content (empty when `file` holds it).
    pub bytes: Vec<u8>,
    /// A file built on disk that holds the content instead of `bytes` (Energon's
    /// `index.sqlite`, too large to keep in memory); removed once written.
    pub file: Option<tempfile::NamedTempFile>,
}

impl DatasetFile {
    /// A file of `bytes`.
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            bytes,
            file: None,
        }
    }

    /// Writes it into `sink` atomically; returns its manifest entry.
    pub fn write_to(
        self,
        sink: &dyn shardsmith_store::OutputSink,
    ) -> shardsmith_store::Result<shardsmith_manifest::FileEntry> {
        use shardsmith_store::finish;
        match self.file {
            Some(file) => {
                let mut reader = file.reopen().map_err(|e| {
                    shardsmith_store::Error::io("reading", file.path().to_path_buf(), e)
                })?;
                finish::write_entry_from(sink, &self.name, &mut reader)
            }
            None => finish::write_entry(sink, &self.name, &self.bytes),
        }
    }
}

/// Builds a format's dataset files from the shards' facts given one shard at a time, in
/// order, as the shards are committed: the work is done while later shards are still
/// being written, not after the last one.
pub trait DatasetBuilder: Send {
    /// The next shard, under its final name.
    fn add(&mut self, name: &str, facts: &Value) -> Result<(), DatasetFilesError>;
    /// The files, once every shard was added.
    fn finish(self: Box<Self>) -> Result<Vec<DatasetFile>, DatasetFilesError>;
}

/// Writes `files` into `sink` (each atomically), several at a time: small files are
/// bound by the latency of their syncs, not by a core. Returns their entries in order.
pub fn write_files(
    sink: &dyn shardsmith_store::OutputSink,
    files: Vec<DatasetFile>,
) -> shardsmith_store::Result<Vec<shardsmith_manifest::FileEntry>> {
    const AT_ONCE: usize = 8;
    let mut slots: Vec<Option<DatasetFile>> = files.into_iter().map(Some).collect();
    let count = slots.len();
    let per = count.div_ceil(AT_ONCE).max(1);
    let results: Vec<shardsmith_store::Result<Vec<shardsmith_manifest::FileEntry>>> =
        std::thread::scope(|scope| {
            let handles: Vec<_> = slots
                .chunks_mut(per)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter_mut()
                            .map(|slot| slot.take().expect("each file once").write_to(sink))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a writer of dataset files panicked"))
                .collect()
        });
    let mut entries = Vec::with_capacity(count);
    for result in results {
        entries.extend(result?);
    }
    Ok(entries)
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
    fn encoded_len(&self, _ext: &str, size: u64, _head: &[u8]) -> Result<u64, ValueError> {
        Ok(size)
    }
    /// Bytes `sample` adds to a shard (exact where the format allows).
    fn sample_bytes(&self, sample: &SampleSpec) -> u64;
    /// Bytes every shard has regardless of its samples.
    fn shard_overhead(&self) -> u64;
    /// Checks the values of a loaded sample (an `int` column must hold an integer); an
    /// error is why the sample is left out.
    fn check_values(&self, _sample: &SampleSpec, _values: &[&[u8]]) -> Result<(), BadValue> {
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
    fn dataset_files(
        &self,
        _shards: &[(&str, &Value)],
    ) -> Result<Vec<DatasetFile>, DatasetFilesError> {
        Ok(Vec::new())
    }
    /// A builder of the same files as [`ShardFormat::dataset_files`], fed each shard as
    /// it is committed (`None`: the files are made at the end).
    fn dataset_builder(&self) -> Option<Box<dyn DatasetBuilder>> {
        None
    }
    /// What [`ShardFormat::dataset_files`] needs besides the shards, as JSON, so that a
    /// run split into tasks can write the dataset files in a final step that never saw
    /// the samples ([`crate::FormatKind::dataset_files`]).
    fn dataset_state(&self) -> Value {
        Value::Null
    }
}
