//! Samples as planned ([`SampleSpec`], [`FieldSpec`]) and where they come from
//! ([`SampleSource`]): a tree of raw files grouped by name (the pack crate's `tree`), or
//! the rows of Parquet files ([`crate::parquet::input`]). The pack pipeline (planning,
//! writing, resume, manifest) only sees this trait.

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::Arc;

use shardsmith_manifest::Skipped;

use crate::Result;
use crate::columns::Encoding;
use crate::content::Validation;

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

/// Samples in their natural order, and the inputs left out while listing them.
#[derive(Debug, Default)]
pub struct SampleListing {
    /// Samples, each with its fields sorted by name.
    pub samples: Vec<SampleSpec>,
    /// Inputs left out, with the reason.
    pub skipped: Vec<Skipped>,
}

/// A sample read for encoding.
pub enum Loaded {
    /// Every field in the caller's buffer, as `(start, end)` ranges in field order.
    Memory(Vec<(usize, usize)>),
    /// Large fields as streams (already content-checked), in field order.
    Streams(Vec<Tracked>),
}

/// A streamed input that remembers how much it yielded and whether it failed, so a
/// failed copy names the input rather than the shard.
pub struct Tracked {
    inner: Box<dyn Read + Send>,
    pub read: u64,
    pub failed: Option<String>,
}

impl Tracked {
    /// Wraps a stream.
    pub fn new(inner: Box<dyn Read + Send>) -> Self {
        Self {
            inner,
            read: 0,
            failed: None,
        }
    }
}

impl Read for Tracked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.read += n as u64;
                Ok(n)
            }
            Err(e) => {
                self.failed = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// Why the first bytes of a field could not be had ([`SampleSource::head`]): the
/// reason its sample is left out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// The source could not open or read the sample.
    #[error(transparent)]
    Source(#[from] crate::Error),
    /// The reader left the sample out; its reason.
    #[error("{0}")]
    LeftOut(String),
    /// The sample has no such field.
    #[error("sample `{key}` has no field `{field}`")]
    NoField {
        /// The sample's key.
        key: String,
        /// The field asked for.
        field: String,
    },
    /// The field's bytes could not be read.
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// The field changed size while it was read.
    #[error("changed while being read")]
    Changed,
    /// The field's file was removed while it was read.
    #[error("disappeared while being read")]
    Vanished,
    /// A prepared field could not be read back from the scratch file.
    #[error("cannot be read back from the scratch file: {0}")]
    Scratch(std::io::Error),
    /// The source cannot size a field from its header.
    #[error(
        "`{field}` is sized from its header, which Parquet input does not support; give the column a static dtype and shape"
    )]
    NoHeader {
        /// The field.
        field: String,
    },
}

/// A source of samples.
pub trait SampleSource: Sync {
    /// Human description (a path or URL) for messages.
    fn describe(&self) -> String;
    /// Every sample, in natural order. Only a failure to list at all is an error.
    fn samples(&self) -> Result<SampleListing>;
    /// Where a field comes from (an input path, a Parquet row and column), for messages,
    /// the skipped list and the manifest's input digest.
    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String;
    /// The first `n` bytes of a field, for formats that size fields by their header.
    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError>;
    /// Encodings the source knows for its fields (a Parquet column's type), used where
    /// the user gave none.
    fn suggested_encodings(&self) -> std::collections::BTreeMap<String, Encoding> {
        std::collections::BTreeMap::new()
    }
    /// The input file that holds `sample` (a tar shard, an MDS shard, a Parquet file),
    /// relative to the input root, for sources that read samples out of containers;
    /// `None` for a tree of raw files. `ls` groups samples by it.
    fn container(&self, _sample: &SampleSpec) -> Option<String> {
        None
    }
    /// Why samples cannot be shuffled, if they cannot.
    fn shuffle_refusal(&self) -> Option<String> {
        None
    }
    /// True when a reader may skip samples and another reader, on a slice of the same
    /// samples, may load them at the same time: idle workers then read a shard's
    /// samples ahead of its writer. False (the default) for sources that fetch ahead
    /// in the writer's order or read containers sequentially.
    fn loads_in_any_order(&self) -> bool {
        false
    }
    /// Reads the samples of one shard, in order (`samples` is that shard's slice).
    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>>;
}

/// Reads one shard's samples, in order.
pub trait SampleReader {
    /// Loads sample `index` of the shard's slice (called with 0, 1, 2, ... in turn).
    /// `Ok(Err(skips))` when it must be left out, with every affected input and reason.
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>>;
}

/// One shared `Arc<str>` per distinct field name: a corpus of millions of samples has a
/// handful of field names, so each sample's fields point at the same few strings.
#[derive(Debug, Default)]
pub struct Interner(HashMap<String, Arc<str>>);

impl Interner {
    /// The shared copy of `text`.
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(text);
        self.0.insert(text.to_string(), shared.clone());
        shared
    }
}
