//! The shard formats `pack` can write, and the options a user gives them.
//!
//! The list is [`FORMATS`], above the formats and apart from the [`FormatDef`] trait
//! each one implements: adding a format is one module implementing [`FormatDef`] and
//! [`crate::ShardFormat`], plus one line in [`FORMATS`]. Everything else (the command
//! line's `--format` values, which options apply, the default shard size, content
//! sniffing for `verify`, the inspector) is asked of the format through this trait.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Finding, Inspection, Inspector, Manifest};

use crate::columns::Encoding;
use crate::format::ShardFormat;
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// Every shard format, in the order `--help` lists them and content sniffing tries them.
pub static FORMATS: &[&dyn FormatDef] = &[
    &crate::webdataset::WEBDATASET,
    &crate::mds::MDS,
    &crate::parquet::PARQUET,
];

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
}

impl OptionName {
    fn flag(self) -> &'static str {
        match self {
            OptionName::Column => "--column",
            OptionName::Hashes => "--hashes",
            OptionName::RowGroupSize => "--row-group-size",
            OptionName::Prefix => "--prefix",
        }
    }
}

impl FormatOptions {
    fn given(&self, option: OptionName) -> bool {
        match option {
            OptionName::Column => !self.columns.is_empty(),
            OptionName::Hashes => self.hashes.is_some(),
            OptionName::RowGroupSize => {
                self.row_group_rows.is_some() || self.row_group_bytes.is_some()
            }
            OptionName::Prefix => self.prefix != "shard",
        }
    }
}

/// A shard format as the registry knows it: its name, defaults, options and how its
/// files are recognised.
pub trait FormatDef: Sync {
    /// The name `--format` takes and manifests record (`webdataset`).
    fn name(&self) -> &'static str;
    /// Other names `--format` accepts (`wds`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// One line for `--help`.
    fn summary(&self) -> &'static str;
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
    /// The format configured for `samples`; `columns` are the encodings to use by field
    /// name (the user's, completed with those the source suggests).
    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>>;
}

/// One entry of [`FORMATS`].
#[derive(Clone, Copy)]
pub struct FormatKind(&'static dyn FormatDef);

impl FormatKind {
    /// Every format.
    pub fn all() -> impl Iterator<Item = FormatKind> {
        FORMATS.iter().map(|def| FormatKind(*def))
    }

    /// The format named `name` (or one of its aliases).
    pub fn from_name(name: &str) -> Option<FormatKind> {
        Self::all().find(|k| k.0.name() == name || k.0.aliases().contains(&name))
    }

    /// The format whose shards look like this file: by name first, then by its first
    /// bytes.
    pub fn sniff(path: &str, head: &[u8]) -> Option<FormatKind> {
        Self::all()
            .find(|k| k.0.sniff_name(path))
            .or_else(|| Self::all().find(|k| k.0.sniff_content(head)))
    }

    /// The format's definition.
    pub fn def(self) -> &'static dyn FormatDef {
        self.0
    }

    /// The name recorded in manifests.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// A structural checker for a file of this format.
    pub fn inspector(self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        self.0.inspector(ctx)
    }
}

impl PartialEq for FormatKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for FormatKind {}

impl std::fmt::Debug for FormatKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A format and its checked options: the one home of the shard size and the prefix.
#[derive(Clone, Debug)]
pub struct FormatChoice {
    kind: FormatKind,
    shard_size: u64,
    prefix: String,
    key_column: String,
    columns: BTreeMap<String, Encoding>,
    configured: Arc<dyn Configured>,
}

impl FormatChoice {
    /// Checks `options` against `kind`: options it does not take are refused, its own are
    /// parsed, and the shard size defaults to the format's.
    pub fn new(kind: FormatKind, options: &FormatOptions) -> Result<Self> {
        let def = kind.def();
        for option in [
            OptionName::Column,
            OptionName::Hashes,
            OptionName::RowGroupSize,
        ] {
            if options.given(option) && !def.takes().contains(&option) {
                return Err(Error::Setting(format!(
                    "{} does not apply to --format {}",
                    option.flag(),
                    def.name()
                )));
            }
        }
        if let Some(why) = def.refuse_prefix(&options.prefix) {
            return Err(Error::Setting(why));
        }
        if !crate::naming::valid_prefix(&options.prefix) {
            return Err(Error::Setting(format!(
                "prefix `{}` must be ASCII letters, digits, `-`, `_` or `.` and not start with a dot (shard URLs are brace-expanded by readers)",
                options.prefix
            )));
        }
        let shard_size = options.shard_size.unwrap_or(def.default_shard_size());
        if shard_size < MIN_SHARD_SIZE {
            return Err(Error::Setting(format!(
                "shard size {shard_size} bytes is too small (at least {MIN_SHARD_SIZE} bytes)"
            )));
        }
        Ok(Self {
            kind,
            shard_size,
            prefix: options.prefix.clone(),
            key_column: options.key_column.clone(),
            columns: options.columns.clone(),
            configured: def.configure(options, shard_size)?,
        })
    }

    /// `kind` with default options.
    pub fn default_for(kind: FormatKind) -> Self {
        Self::new(kind, &FormatOptions::default()).expect("default options suit every format")
    }

    /// Which format.
    pub fn kind(&self) -> FormatKind {
        self.kind
    }

    /// Largest shard in bytes: what the planner cuts by and what a format records
    /// (MDS `size_limit`).
    pub fn shard_size(&self) -> u64 {
        self.shard_size
    }

    /// Shard name prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Name of the column holding the sample key (tabular formats; also what a Parquet
    /// input's key column is called).
    pub fn key_column(&self) -> &str {
        &self.key_column
    }

    /// The format configured for `samples`. `suggested` are encodings the source knows
    /// for its fields (a Parquet column's type), used where the user gave none.
    pub fn build(
        &self,
        samples: &[SampleSpec],
        suggested: BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        let present = crate::sample::field_names(samples);
        let mut columns = self.columns.clone();
        for (field, encoding) in suggested {
            if present.contains(field.as_str()) {
                columns.entry(field).or_insert(encoding);
            }
        }
        self.configured.build(samples, &columns)
    }
}
