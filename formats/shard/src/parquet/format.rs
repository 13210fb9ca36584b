//! [`Parquet`], the [`ShardFormat`] of Parquet shards: the schema and writer properties
//! of one dataset, and the checks of its samples.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field as ArrowField, Schema};
use parquet::basic::{Compression as Codec, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;
use serde_json::{Value, json};

use super::encode::{Batch, ParquetEncoder};
use super::layout::{Kind, Layout, kind_of};
use super::options::{ParquetCompression, ParquetOptions};
use crate::columns::Encoding;
use crate::format::{BadValue, ShardEncoder, ShardFormat};
use crate::sample::SampleSpec;
use crate::{Error, Result};

/// The Parquet format configured for one dataset.
pub struct Parquet {
    pub(super) layout: Arc<Layout>,
}

impl Parquet {
    /// Configures Parquet for `samples`: the key column, then one column per field any
    /// sample has, in name order.
    pub fn new(
        options: &ParquetOptions,
        overrides: &BTreeMap<String, Encoding>,
        key_column: &str,
        samples: &[SampleSpec],
    ) -> Result<Self> {
        let fields = crate::sample::field_names(samples);
        if fields.contains(key_column) {
            return Err(Error::Setting(format!(
                "a field is named `{key_column}`, which is the key column; name the key column differently with --key-column"
            )));
        }
        for name in overrides.keys() {
            if !fields.contains(name.as_str()) {
                return Err(Error::Setting(format!(
                    "--column `{name}`: no sample has that field"
                )));
            }
        }
        let mut columns = vec![ArrowField::new(key_column, DataType::Utf8, false)];
        let mut kinds = vec![Kind::Utf8];
        let mut encodings = vec![Encoding::Str];
        let mut builder = properties(options, key_column)?;
        for name in &fields {
            let encoding = overrides
                .get(*name)
                .cloned()
                .unwrap_or_else(|| Encoding::for_field(name));
            let kind = kind_of(&encoding)
                .map_err(|e| Error::Setting(format!("--column `{name}`: {e}")))?;
            let data_type = arrow_type(&kind);
            if matches!(kind, Kind::Binary | Kind::Fixed(_)) {
                builder = builder.set_column_dictionary_enabled(ColumnPath::from(*name), false);
            }
            columns.push(arrow_field(name, data_type, &encoding));
            kinds.push(kind);
            encodings.push(encoding);
        }
        Ok(Self {
            layout: Arc::new(Layout {
                schema: Arc::new(Schema::new(columns)),
                kinds,
                encodings,
                props: builder.build(),
                options: options.clone(),
            }),
        })
    }
}

/// The writer properties of every shard, before the per-column settings: `options`'
/// compression and row groups, page statistics, and no dictionary for the key column.
fn properties(options: &ParquetOptions, key_column: &str) -> Result<WriterPropertiesBuilder> {
    Ok(WriterProperties::builder()
        .set_compression(match options.compression {
            ParquetCompression::Zstd(l) => {
                Codec::ZSTD(ZstdLevel::try_new(l).map_err(|e| Error::Setting(e.to_string()))?)
            }
            ParquetCompression::Snappy => Codec::SNAPPY,
            ParquetCompression::None => Codec::UNCOMPRESSED,
        })
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_statistics_truncate_length(Some(64))
        .set_column_index_truncate_length(Some(64))
        .set_max_row_group_row_count(Some(options.row_group_rows))
        .set_max_row_group_bytes(Some(options.row_group_bytes))
        .set_created_by(format!("shardsmith {}", env!("CARGO_PKG_VERSION")))
        .set_column_dictionary_enabled(ColumnPath::from(key_column), false))
}

/// The Arrow type a column of `kind` is stored as.
fn arrow_type(kind: &Kind) -> DataType {
    match kind {
        Kind::Utf8 => DataType::Utf8,
        Kind::Binary => DataType::Binary,
        Kind::Int => DataType::Int64,
        Kind::Int32 => DataType::Int32,
        Kind::Float => DataType::Float64,
        Kind::Fixed(n) => DataType::FixedSizeBinary(*n as i32),
        Kind::Nested(t) => t.clone(),
    }
}

/// The (nullable) column of field `name`; an array of known dtype and shape records
/// them in the column's metadata.
fn arrow_field(name: &str, data_type: DataType, encoding: &Encoding) -> ArrowField {
    let mut column = ArrowField::new(name, data_type, true);
    if let Encoding::NdArray {
        dtype: Some(d),
        shape: Some(shape),
    } = encoding
    {
        column = column.with_metadata(std::collections::HashMap::from([
            ("dtype".to_string(), d.name().to_string()),
            ("shape".to_string(), json!(shape).to_string()),
        ]));
    }
    column
}

impl ShardFormat for Parquet {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn shard_name(&self, prefix: &str, index: usize) -> String {
        format!("{prefix}-{index:06}.parquet")
    }

    fn refuse(&self, _sample: &SampleSpec) -> Option<String> {
        None
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        // Plain encoding: 4-byte length plus the value, before compression (an upper
        // bound of the compressed size for the data this format is for).
        4 + sample.key.len() as u64 + sample.fields.iter().map(|f| 4 + f.encoded).sum::<u64>()
    }

    fn shard_overhead(&self) -> u64 {
        4096
    }

    fn check_values(&self, sample: &SampleSpec, values: &[&[u8]]) -> Result<(), BadValue> {
        for (field, value) in sample.fields.iter().zip(values) {
            if let Some(i) = self
                .layout
                .schema
                .fields()
                .iter()
                .position(|c| c.name() == &*field.ext)
            {
                self.layout.encodings[i]
                    .encode(value)
                    .map_err(|e| BadValue::new(&field.ext, e, None))?;
            }
        }
        Ok(())
    }

    fn options(&self) -> BTreeMap<String, Value> {
        let mut options = BTreeMap::new();
        let columns: serde_json::Map<String, Value> = self
            .layout
            .schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), Value::from(f.data_type().to_string())))
            .collect();
        options.insert("columns".into(), Value::Object(columns));
        options.insert(
            "compression".into(),
            Value::from(self.layout.options.compression.name()),
        );
        options.insert(
            "row_group_rows".into(),
            Value::from(self.layout.options.row_group_rows),
        );
        options.insert(
            "row_group_bytes".into(),
            Value::from(self.layout.options.row_group_bytes),
        );
        options
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(ParquetEncoder {
            layout: self.layout.clone(),
            writer: None,
            batch: Batch::new(&self.layout),
            rows: 0,
        })
    }
}
