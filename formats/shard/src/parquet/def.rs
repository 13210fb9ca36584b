//! Parquet in the format registry: options, defaults and how its files are told.

use std::collections::BTreeMap;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Inspector};
use shardsmith_store::InputSource;

use super::input::{ParquetRows, is_parquet_input};
use super::inspect::ParquetInspector;
use super::{Parquet, ParquetCompression, ParquetOptions};
use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, InputSpec, OptionName};
use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result, ShardFormat};

/// The registry entry of Parquet.
pub struct Def;

/// The registry entry of Parquet.
pub static PARQUET: Def = Def;

/// Parquet options checked for a dataset, before its samples are known.
#[derive(Debug)]
struct Checked {
    options: ParquetOptions,
    key_column: String,
}

impl FormatDef for Def {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn summary(&self) -> &'static str {
        "Parquet files (PREFIX-NNNNNN.parquet): a key column and one column per field"
    }

    fn title(&self) -> &'static str {
        "Parquet"
    }

    fn input_summary(&self) -> &'static str {
        "Parquet files: every row is a sample, every column a field"
    }

    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool {
        is_parquet_input(source, only)
    }

    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>> {
        let rows = ParquetRows::open(source, spec.shown, spec.one_file(), spec.key_column)?;
        Ok(Box::new(rows.with_key_prefix(spec.key_prefix)))
    }

    /// A shard's data is built in memory and freed at its end.
    fn buffers(&self) -> crate::definition::Buffers {
        crate::definition::Buffers::Shards
    }
    fn takes(&self) -> &'static [OptionName] {
        &[
            OptionName::Column,
            OptionName::RowGroupSize,
            OptionName::Prefix,
        ]
    }

    fn configure(&self, options: &FormatOptions, _shard_size: u64) -> Result<Arc<dyn Configured>> {
        let mut parquet = ParquetOptions::default();
        if let Some(text) = &options.compression {
            parquet.compression = ParquetCompression::parse(text)
                .map_err(|e| Error::Setting(format!("--compression: {e}")))?;
        }
        if let Some(rows) = options.row_group_rows {
            parquet.row_group_rows = rows;
        }
        if let Some(bytes) = options.row_group_bytes {
            parquet.row_group_bytes = bytes;
        }
        if parquet.row_group_rows == 0 || parquet.row_group_bytes == 0 {
            return Err(Error::Setting("--row-group-size must be at least 1".into()));
        }
        Ok(Arc::new(Checked {
            options: parquet,
            key_column: options.key_column.clone(),
        }))
    }

    fn sniff_name(&self, path: &str) -> bool {
        path.ends_with(".parquet")
    }

    fn sniff_content(&self, head: &[u8]) -> bool {
        head.starts_with(b"PAR1")
    }

    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        Box::new(ParquetInspector::new(ctx))
    }
}

impl Configured for Checked {
    fn accepts(&self, encoding: &Encoding) -> bool {
        super::accepts(encoding)
    }

    fn build(
        &self,
        samples: &[SampleSpec],
        columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        Ok(Box::new(Parquet::new(
            &self.options,
            columns,
            &self.key_column,
            samples,
        )?))
    }
}
