//! One record as a planned sample: its key (the key column's text, or the global sample
//! index) and its fields with their sizes as given to writers.

use super::index::ColumnSet;
use super::problem::Problem;
use super::shard_error::RecordError;
use crate::sample::FieldSpec;

/// What a record becomes.
pub(super) enum Planned {
    /// A sample: key and fields (sorted by name).
    Sample(String, Vec<FieldSpec>),
    /// Left out, with the reason.
    Skip(String),
}

/// Plans the record whose column values are `values` (global sample index `global`).
/// The error is why the record is damaged.
pub(super) fn plan(set: &ColumnSet, values: &[&[u8]], global: u64) -> Result<Planned, RecordError> {
    let key = match set.key {
        None => format!("{global:09}"),
        Some(k) => {
            let column = &set.columns[k];
            let text = match column.kind.convert(values[k]) {
                Ok(text) => text,
                Err(Problem::Corrupt(why)) => {
                    return Err(RecordError::Corrupt {
                        column: column.name.clone(),
                        why,
                    });
                }
                Err(Problem::Unsupported(why)) => {
                    return Ok(Planned::Skip(format!(
                        "the key column `{}` {why}",
                        column.name
                    )));
                }
            };
            match String::from_utf8(text.into_owned()) {
                Ok(key) if key.is_empty() => return Ok(Planned::Skip("the key is empty".into())),
                Ok(key) => key,
                Err(_) => {
                    return Ok(Planned::Skip(format!(
                        "the key column `{}` is not UTF-8 text",
                        column.name
                    )));
                }
            }
        }
    };
    let mut fields = Vec::with_capacity(set.fields.len());
    for &c in &set.fields {
        let column = &set.columns[c];
        match column.kind.field_len(values[c]) {
            Ok(size) => {
                fields.push(FieldSpec {
                    ext: column.field.clone(),
                    source_ext: column.field.clone(),
                    size,
                    encoded: size,
                });
            }
            Err(Problem::Corrupt(why)) => {
                return Err(RecordError::Corrupt {
                    column: column.name.clone(),
                    why,
                });
            }
            Err(Problem::Unsupported(why)) => {
                return Ok(Planned::Skip(format!("column `{}` {why}", column.name)));
            }
        }
    }
    Ok(Planned::Sample(key, fields))
}
