//! The shard formats `pack` can write and every command reads: the list [`FORMATS`],
//! above the formats and apart from the [`FormatDef`] trait each one implements (in
//! [`crate::definition`]). Adding a format is one module implementing [`FormatDef`] and
//! [`crate::ShardFormat`], plus one line in [`FORMATS`]. Everything else (the command
//! line's `--format` and `--input-format` values, which options apply, the default shard
//! size, telling an input's format, opening it, content sniffing for `verify`, the
//! inspector) is asked of the format through that trait.

use std::collections::BTreeMap;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Inspector};
use shardsmith_store::InputSource;

use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, MIN_SHARD_SIZE, OptionName};
use crate::format::ShardFormat;
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// Every shard format, in the order `--help` lists them and content sniffing tries them.
pub static FORMATS: &[&dyn FormatDef] = &[
    &crate::webdataset::def::WEBDATASET,
    &crate::mds::def::MDS,
    &crate::parquet::def::PARQUET,
    &crate::hf::def::HF,
    &crate::litdata::def::LITDATA,
];

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

    /// The format of the dataset `source` holds (or of the one file of it `only`
    /// names), if any: the formats whose datasets have a root index first, then the
    /// others in [`FORMATS`] order. The one probe order of every command that reads
    /// shards (`pack` with `--input-format auto`, `ls`, `cat`, `stats`).
    pub fn detect_input(source: &dyn InputSource, only: Option<&str>) -> Option<FormatKind> {
        let indexed = Self::all().filter(|k| k.0.has_root_index());
        let others = Self::all().filter(|k| !k.0.has_root_index());
        indexed.chain(others).find(|k| k.0.is_input(source, only))
    }

    /// The format's definition.
    pub fn def(self) -> &'static dyn FormatDef {
        self.0
    }

    /// The name recorded in manifests.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The dataset files (MDS `index.json`) for `shards`, names and facts in order, from
    /// the state a writer of this format recorded ([`ShardFormat::dataset_state`]).
    pub fn dataset_files(
        self,
        state: &serde_json::Value,
        shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        self.0.dataset_files(state, shards)
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
            OptionName::Index,
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
            if present.contains(field.as_str()) && self.configured.accepts(&encoding) {
                columns.entry(field).or_insert(encoding);
            }
        }
        self.configured.build(samples, &columns)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{FormatChoice, FormatKind};
    use crate::columns::Encoding;
    use crate::definition::FormatOptions;
    use crate::sample::{FieldSpec, SampleSpec};

    fn samples() -> Vec<SampleSpec> {
        vec![SampleSpec {
            key: "a".into(),
            fields: vec![FieldSpec::new("arr", 200), FieldSpec::new("n", 2)],
            origin: 0,
        }]
    }

    /// A local tree holding `files` (empty files, but the MDS index has content).
    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for rel in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let content: &[u8] = if rel.ends_with("index.json") {
                br#"{"version": 2, "shards": [{"format": "mds"}]}"#
            } else {
                b""
            };
            std::fs::write(path, content).unwrap();
        }
        dir
    }

    fn detected(files: &[&str], only: Option<&str>) -> Option<&'static str> {
        let dir = tree(files);
        let source = shardsmith_store::LocalTree::new(dir.path());
        FormatKind::detect_input(&source, only).map(FormatKind::name)
    }

    #[test]
    fn an_input_is_told_by_one_probe_order_and_at_most_one_format_claims_it() {
        let cases: &[(&[&str], Option<&str>, Option<&str>)] = &[
            (
                &["shard-000000.tar", "shard-000001.tar.gz", "manifest.json"],
                None,
                Some("webdataset"),
            ),
            // img2dataset: tars with Parquet metadata and JSON stats beside them.
            (
                &["00000.tar", "00000.parquet", "00000_stats.json"],
                None,
                Some("webdataset"),
            ),
            (
                &["a.parquet", "part/b.parquet", "SHA256SUMS"],
                None,
                Some("parquet"),
            ),
            (&["index.json", "shard.00000.mds"], None, Some("mds")),
            (
                &["index.json", "shard.00000.mds"],
                Some("index.json"),
                Some("mds"),
            ),
            (
                &["shard-000000.tar"],
                Some("shard-000000.tar"),
                Some("webdataset"),
            ),
            (&["a.parquet"], Some("a.parquet"), Some("parquet")),
            (&["img/1.jpg", "img/1.json", "shard-000000.tar"], None, None),
            (&["notes.txt"], None, None),
        ];
        for (files, only, expected) in cases {
            assert_eq!(detected(files, *only), *expected, "{files:?} {only:?}");
            let dir = tree(files);
            let source = shardsmith_store::LocalTree::new(dir.path());
            let claims: Vec<&str> = FormatKind::all()
                .filter(|k| k.def().is_input(&source, *only))
                .map(FormatKind::name)
                .collect();
            assert!(claims.len() <= 1, "{files:?}: claimed by {claims:?}");
        }
        // An index names the dataset whatever lies beside it: MDS is asked first.
        assert_eq!(detected(&["index.json", "x.tar"], None), Some("mds"));
    }

    #[test]
    fn a_suggestion_the_format_cannot_store_falls_back_to_its_default() {
        let kind = FormatKind::from_name("parquet").unwrap();
        let choice = FormatChoice::new(kind, &FormatOptions::default()).unwrap();
        let suggested: BTreeMap<String, Encoding> = [
            ("arr".to_string(), Encoding::parse("ndarray").unwrap()),
            ("n".to_string(), Encoding::parse("uint64").unwrap()),
        ]
        .into();
        assert!(choice.build(&samples(), suggested.clone()).is_ok());
        // Given by the user, the same encodings are refused, not silently replaced.
        let options = FormatOptions {
            columns: suggested,
            ..FormatOptions::default()
        };
        let choice = FormatChoice::new(kind, &options).unwrap();
        let Err(err) = choice.build(&samples(), BTreeMap::new()) else {
            panic!("an ndarray column without a static shape was accepted")
        };
        assert!(
            err.to_string().contains("has no Parquet column type"),
            "{err}"
        );
    }
}
