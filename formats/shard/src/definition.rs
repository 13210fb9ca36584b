//! What a shard format tells the registry about itself ([`FormatDef`]), and the options
//! a user gives a format before any format has seen them ([`FormatOptions`]). Each
//! format implements [`FormatDef`] in its own `def.rs`; the list of formats is
//! [`crate::registry`], above them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Finding, Inspection, Inspector, Manifest};
use shardsmith_store::InputSource;

use crate::Result;
use crate::columns::Encoding;
use crate::format::ShardFormat;
use crate::keys::KeyPrefix;
use crate::sample::{SampleSource, SampleSpec};

/// Smallest accepted shard size.
pub const MIN_SHARD_SIZE: u64 = 4096;

/// The options a user gives `pack` for its output format, before any format has seen
/// them. Each format takes the options it knows and refuses the others (an option that
/// would be ignored is an error, not a surprise).
#[derive(Clone, Debug)]
pub struct FormatOptions {
    /// Largest shard (`None`: the format's default, [`FormatDef::default_shard_size`]).
    pub shard_size: Option<u64>,
    /// Shard name prefix (`shard`).
    pub prefix: String,
    /// Compression, as the user spelled it (`zstd:7`).
    pub compression: Option<String>,
    /// Column encodings by field name (tabular formats).
    pub columns: BTreeMap<String, Encoding>,
    /// Name of the column holding the sample key (tabular formats).
    pub key_column: String,
    /// Hash algorithms recorded per shard (MDS), as the user spelled them.
    pub hashes: Option<String>,
    /// Rows per row group (Parquet).
    pub row_group_rows: Option<usize>,
    /// Bytes per row group (Parquet).
    pub row_group_bytes: Option<usize>,
    /// Readers' indexes to write beside the shards (`wids`, `all`), as the user spelled
    /// them (WebDataset).
    pub index: Option<String>,
}

impl Default for FormatOptions {
    fn default() -> Self {
        Self {
            shard_size: None,
            prefix: "shard".into(),
            compression: None,
            columns: BTreeMap::new(),
            key_column: "key".into(),
            hashes: None,
            row_group_rows: None,
            row_group_bytes: None,
            index: None,
        }
    }
}

/// The options of [`FormatOptions`] that only some formats take, by their flag names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionName {
    /// `--column`.
    Column,
    /// `--hashes`.
    Hashes,
    /// `--row-group-size`.
    RowGroupSize,
    /// `--prefix` other than the default.
    Prefix,
    /// `--index`.
    Index,
}

impl OptionName {
    /// The flag as the command line spells it.
    pub fn flag(self) -> &'static str {
        match self {
            OptionName::Column => "--column",
            OptionName::Hashes => "--hashes",
            OptionName::RowGroupSize => "--row-group-size",
            OptionName::Prefix => "--prefix",
            OptionName::Index => "--index",
        }
    }
}

impl FormatOptions {
    /// True when the user gave `option`.
    pub fn given(&self, option: OptionName) -> bool {
        match option {
            OptionName::Column => !self.columns.is_empty(),
            OptionName::Hashes => self.hashes.is_some(),
            OptionName::RowGroupSize => {
                self.row_group_rows.is_some() || self.row_group_bytes.is_some()
            }
            OptionName::Prefix => self.prefix != "shard",
            OptionName::Index => self.index.is_some(),
        }
    }
}

/// How a dataset of a format is read as input (`pack`'s INPUT, the DATASET of `ls`,
/// `cat` and `stats`).
#[derive(Clone, Debug)]
pub struct InputSpec<'a> {
    /// The input as the user named it, for messages.
    pub shown: &'a str,
    /// The one file the input names, when it names a file rather than a directory.
    pub only: Option<&'a str>,
    /// The one shard to read (`cat --shard`), when not the whole dataset; keys stay
    /// those of the whole dataset.
    pub shard: Option<&'a str>,
    /// The column that holds the sample key (tabular formats).
    pub key_column: &'a str,
    /// What goes before every key (`pack --key-prefix`).
    pub key_prefix: KeyPrefix,
    /// Where decompressed copies of compressed shards go, so that reads can go back;
    /// `None`: a compressed shard is decompressed from its start for such a read.
    pub scratch: Option<PathBuf>,
}

impl InputSpec<'_> {
    /// The one file to read, for formats whose shards stand alone: the shard asked for,
    /// else the file the input names (`None`: every shard of the dataset).
    pub fn one_file(&self) -> Option<&str> {
        self.shard.or(self.only)
    }
}

/// How a format's writer (or reader) uses memory, which decides how long the
/// allocator should keep freed memory before giving it back to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffers {
    /// Bytes stream through: little is allocated per sample.
    Streamed,
    /// Batches of rows are built and freed over and over (Arrow record batches).
    Batches,
    /// A whole shard (or row group) is built in memory and freed at the shard's end.
    Shards,
}

/// A shard format as the registry knows it: its name, defaults, options, how its
/// files are recognised and how a dataset of it is read.
pub trait FormatDef: Sync {
    /// The name `--format` takes and manifests record (`webdataset`).
    fn name(&self) -> &'static str;
    /// Other names `--format` accepts (`wds`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// One line for `--help`.
    fn summary(&self) -> &'static str;
    /// The format's name in messages (`MDS`).
    fn title(&self) -> &'static str;
    /// One line for `--input-format`'s help: what an input of this format is.
    fn input_summary(&self) -> &'static str;
    /// True when `source` (or the one file of it that `only` names) is a dataset of
    /// this format ([`crate::FormatKind::detect_input`] asks every format).
    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool;
    /// True when a dataset of this format is named by an index at its root (MDS's
    /// `index.json`) rather than by what its files are: such a format is asked first,
    /// since its index says what the dataset is whatever else lies beside it.
    fn has_root_index(&self) -> bool {
        false
    }
    /// The samples of a dataset of this format, read through `source`.
    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>>;
    /// True when a list of files (`--files-from`, a brace pattern) can select the
    /// dataset's shards; false when the dataset is read whole (through an index, or
    /// as one table).
    fn selects_files(&self) -> bool {
        false
    }
    /// How the format's writer and reader use memory ([`Buffers::Streamed`] unless said).
    fn buffers(&self) -> Buffers {
        Buffers::Streamed
    }
    /// Shard size when the user gives none.
    fn default_shard_size(&self) -> u64 {
        256 << 20
    }
    /// The options of [`OptionName`] this format takes.
    fn takes(&self) -> &'static [OptionName];
    /// Why `prefix` cannot name this format's shards, if it cannot (MDS names are fixed).
    fn refuse_prefix(&self, _prefix: &str) -> Option<String> {
        None
    }
    /// Checks and parses the format's own options (compression, hashes, ...).
    fn configure(&self, options: &FormatOptions, shard_size: u64) -> Result<Arc<dyn Configured>>;
    /// True when a file's name says it is one of this format's shards (used by
    /// `verify` when no manifest says).
    /// The dataset files for `shards` from the state a [`ShardFormat`] of this kind
    /// recorded ([`ShardFormat::dataset_state`]); none by default.
    fn dataset_files(
        &self,
        _state: &serde_json::Value,
        _shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        Ok(Vec::new())
    }
    /// The dataset files of its own each separately packed part holds that
    /// [`FormatDef::merged_files`] needs (`state.json`, ...); none by default.
    fn part_files(&self) -> &'static [&'static str] {
        &[]
    }
    /// The root dataset files over separately packed parts (`merge OUTPUT PART...`),
    /// from each part's directory name and its [`FormatDef::part_files`] in that order;
    /// the parts' shards are named under their directory. None by default (MDS's root
    /// `index.json` is written by the merge itself).
    fn merged_files(
        &self,
        _parts: &[(&str, Vec<Vec<u8>>)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        Ok(Vec::new())
    }
    fn sniff_name(&self, path: &str) -> bool;
    /// True when a file's first bytes say it is one of this format's shards; asked of
    /// every format only after no format claimed the name.
    fn sniff_content(&self, _head: &[u8]) -> bool {
        false
    }
    /// A structural checker for a file of this format.
    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector>;
    /// Checks that span files (an MDS index against its shards), once every file of a
    /// directory was inspected.
    fn check_layout(
        &self,
        _root: &Path,
        _files: &BTreeMap<String, u64>,
        _inspections: &BTreeMap<String, Inspection>,
        _manifest: Option<&Manifest>,
    ) -> Vec<Finding> {
        Vec::new()
    }
}

/// A format with its options checked, ready to be built for a dataset's samples.
pub trait Configured: Send + Sync + std::fmt::Debug {
    /// True when the format can store a column of `encoding` (a source's suggestion it
    /// cannot store falls back to the format's default for the field).
    fn accepts(&self, _encoding: &Encoding) -> bool {
        true
    }

    /// The format configured for `samples`; `columns` are the encodings to use by field
    /// name (the user's, completed with those the source suggests).
    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>>;
}
