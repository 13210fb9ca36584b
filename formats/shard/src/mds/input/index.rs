//! `index.json` of an MDS dataset (`../shared/reference/mds.md` §2, §11): the shards in
//! order, where their files are (merged indices carry sub-directories in the basenames),
//! and their columns, parsed into what reading a record needs.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::index_error::{ColumnsError, EntryError, FileRefError, IndexError};
use super::values::ColumnKind;
use crate::columns::Encoding;
use crate::mds::codec::{Family, MdsCompression};

/// A file of a shard as the index names it.
#[derive(Clone, Debug)]
pub(super) struct FileRef {
    /// Path relative to the input root.
    pub(super) rel: String,
    /// `bytes` of the index entry, when it is a number.
    pub(super) bytes: Option<u64>,
}

/// One column of a shard.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Column {
    /// As the index names it.
    pub(super) name: String,
    /// The field it becomes (lowercased name).
    pub(super) field: Arc<str>,
    /// How its stored bytes become field bytes.
    pub(super) kind: ColumnKind,
    /// Fixed stored size (`column_sizes`; `null` and `0` mean variable, as for the reader).
    pub(super) fixed: Option<u64>,
}

/// The columns of a shard (shared by the shards that have the same ones).
#[derive(Debug, PartialEq)]
pub(super) struct ColumnSet {
    /// In record order (sorted names, as the index lists them).
    pub(super) columns: Vec<Column>,
    /// The key column's position, when the shards have it with an encoding that is text.
    pub(super) key: Option<usize>,
    /// Field columns (all but the key) as positions, sorted by field name.
    pub(super) fields: Vec<usize>,
    /// Number of variable-size columns (a `u32` size each at the start of a record).
    pub(super) variable: usize,
}

/// One shard entry of the index.
#[derive(Debug)]
pub(super) struct Shard {
    pub(super) raw: FileRef,
    pub(super) zip: Option<FileRef>,
    /// Decompressor of `zip`.
    pub(super) family: Option<Family>,
    /// Samples, as the index says.
    pub(super) samples: u64,
    /// Global index of its first sample (in the whole index).
    pub(super) first: u64,
    pub(super) columns: Arc<ColumnSet>,
}

/// True when `text` is an MDS index: JSON, `version` 2, `shards` a list whose entries
/// all have `format` `mds`.
pub(super) fn looks_like_index(text: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return false;
    };
    value["version"].as_u64() == Some(2)
        && value["shards"]
            .as_array()
            .is_some_and(|shards| shards.iter().all(|s| s["format"] == "mds"))
}

/// Parses an index at `dir` (`""` for the root; basenames are relative to it). Errors are
/// the reason, for the caller to name the file.
pub(super) fn parse(text: &[u8], dir: &str, key_column: &str) -> Result<Vec<Shard>, IndexError> {
    let value: Value = serde_json::from_slice(text).map_err(IndexError::Json)?;
    if !value.is_object() {
        return Err(IndexError::NotObject);
    }
    match value.get("version") {
        Some(v) if v.as_u64() == Some(2) => {}
        Some(v) => return Err(IndexError::Version(v.clone())),
        None => return Err(IndexError::NoVersion),
    }
    let entries = value
        .get("shards")
        .and_then(Value::as_array)
        .ok_or(IndexError::NoShards)?;
    let mut sets: Vec<Arc<ColumnSet>> = Vec::new();
    let mut encodings: HashMap<String, (usize, String)> = HashMap::new();
    let mut shards = Vec::with_capacity(entries.len());
    let mut first = 0u64;
    for (i, entry) in entries.iter().enumerate() {
        let at = |error: EntryError| IndexError::Entry { index: i, error };
        let Entry {
            raw,
            zip,
            family,
            samples,
            set,
        } = parse_entry(entry, dir, key_column).map_err(at)?;
        same_encodings(&mut encodings, i, &set).map_err(at)?;
        shards.push(Shard {
            raw,
            zip,
            family,
            samples,
            first,
            columns: shared(&mut sets, set),
        });
        first = first
            .checked_add(samples)
            .ok_or_else(|| at(EntryError::Overflow))?;
    }
    Ok(shards)
}

/// One shard entry, parsed; its first sample is the caller's to count.
struct Entry {
    raw: FileRef,
    zip: Option<FileRef>,
    family: Option<Family>,
    samples: u64,
    set: ColumnSet,
}

/// Parses one entry of `shards`.
fn parse_entry(entry: &Value, dir: &str, key_column: &str) -> Result<Entry, EntryError> {
    let get = |key: &str| {
        entry
            .get(key)
            .ok_or_else(|| EntryError::NoKey(key.to_string()))
    };
    if get("format")? != "mds" {
        return Err(EntryError::Format(entry["format"].clone()));
    }
    if get("version")?.as_u64() != Some(2) {
        return Err(EntryError::Version(entry["version"].clone()));
    }
    let samples = get("samples")?.as_u64().ok_or(EntryError::Samples)?;
    let raw = file_ref(get("raw_data")?, dir).map_err(EntryError::RawData)?;
    let zip = match get("zip_data")? {
        Value::Null => None,
        v => Some(file_ref(v, dir).map_err(EntryError::ZipData)?),
    };
    let family = match get("compression")? {
        Value::Null => None,
        Value::String(s) => MdsCompression::parse(s)
            .map_err(EntryError::Compression)?
            .map(|c| c.family),
        v => return Err(EntryError::CompressionName(v.clone())),
    };
    let family = family.or_else(|| {
        zip.as_ref()
            .and_then(|z| z.rel.rsplit('.').next())
            .and_then(Family::from_ext)
    });
    if zip.is_some() && family.is_none() {
        return Err(EntryError::ZipCodec);
    }
    let set = columns(entry, key_column)?;
    Ok(Entry {
        raw,
        zip,
        family,
        samples,
        set,
    })
}

/// Refuses a column of entry `i` whose encoding differs from the one an earlier entry
/// gave it; `encodings` holds the latest entry and encoding of each column name.
fn same_encodings(
    encodings: &mut HashMap<String, (usize, String)>,
    i: usize,
    set: &ColumnSet,
) -> Result<(), EntryError> {
    for column in &set.columns {
        let name = column.kind.to_string();
        if let Some((other, theirs)) = encodings.get(&column.name)
            && *theirs != name
        {
            return Err(EntryError::EncodingDiffers {
                column: column.name.clone(),
                here: name,
                theirs: theirs.clone(),
                other: *other,
            });
        }
        encodings.insert(column.name.clone(), (i, name));
    }
    Ok(())
}

/// `set`, shared with the shards before that have the same columns.
fn shared(sets: &mut Vec<Arc<ColumnSet>>, set: ColumnSet) -> Arc<ColumnSet> {
    match sets.iter().find(|s| ***s == set) {
        Some(s) => s.clone(),
        None => {
            let s = Arc::new(set);
            sets.push(s.clone());
            s
        }
    }
}

fn file_ref(value: &Value, dir: &str) -> Result<FileRef, FileRefError> {
    let base = value["basename"].as_str().ok_or(FileRefError::NoBasename)?;
    let bad = base.is_empty()
        || base.starts_with('/')
        || base.contains('\\')
        || base
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(FileRefError::Basename(base.to_string()));
    }
    Ok(FileRef {
        rel: if dir.is_empty() {
            base.to_string()
        } else {
            format!("{dir}/{base}")
        },
        bytes: value["bytes"].as_u64(),
    })
}

fn strings<'a>(entry: &'a Value, key: &'static str) -> Result<Vec<&'a str>, ColumnsError> {
    entry[key]
        .as_array()
        .ok_or(ColumnsError::NoList(key))?
        .iter()
        .map(|v| {
            v.as_str().ok_or_else(|| ColumnsError::NotString {
                key,
                value: v.clone(),
            })
        })
        .collect()
}

fn columns(entry: &Value, key_column: &str) -> Result<ColumnSet, ColumnsError> {
    let names = strings(entry, "column_names")?;
    let encodings = strings(entry, "column_encodings")?;
    let sizes = entry["column_sizes"]
        .as_array()
        .ok_or(ColumnsError::NoList("column_sizes"))?;
    if encodings.len() != names.len() || sizes.len() != names.len() {
        return Err(ColumnsError::Counts {
            names: names.len(),
            encodings: encodings.len(),
            sizes: sizes.len(),
        });
    }
    let mut columns = Vec::with_capacity(names.len());
    let mut key = None;
    let mut seen = HashMap::new();
    for (i, ((name, encoding), size)) in names.iter().zip(&encodings).zip(sizes).enumerate() {
        let kind = ColumnKind::parse(encoding).map_err(|error| ColumnsError::Encoding {
            name: name.to_string(),
            encoding: encoding.to_string(),
            error,
        })?;
        let fixed = fixed_size(name, encoding, &kind, size)?;
        let field = name.to_ascii_lowercase();
        if *name == key_column && kind.is_text() {
            key = Some(i);
        } else {
            check_field(name, &field, &mut seen)?;
        }
        columns.push(Column {
            name: name.to_string(),
            field: Arc::from(field),
            kind,
            fixed,
        });
    }
    let mut fields: Vec<usize> = (0..columns.len()).filter(|&i| Some(i) != key).collect();
    fields.sort_by(|&a, &b| columns[a].field.cmp(&columns[b].field));
    let variable = columns.iter().filter(|c| c.fixed.is_none()).count();
    Ok(ColumnSet {
        columns,
        key,
        fields,
        variable,
    })
}

/// A column's fixed stored size (`null` and `0` mean variable), which must be its
/// encoding's when that has one.
fn fixed_size(
    name: &str,
    encoding: &str,
    kind: &ColumnKind,
    size: &Value,
) -> Result<Option<u64>, ColumnsError> {
    let fixed = match size {
        Value::Null => None,
        v => match v.as_u64() {
            Some(0) => None,
            Some(n) => Some(n),
            None => {
                return Err(ColumnsError::Size {
                    name: name.to_string(),
                    value: v.clone(),
                });
            }
        },
    };
    if let (Some(want), Some(got)) = (kind.fixed_size(), fixed)
        && want != got
    {
        return Err(ColumnsError::FixedSize {
            name: name.to_string(),
            encoding: encoding.to_string(),
            got,
            want,
        });
    }
    Ok(fixed)
}

/// Refuses a field name a sample cannot have, or one that differs from an earlier
/// column's only in case (`seen` maps the field names so far to their column names).
fn check_field<'a>(
    name: &'a str,
    field: &str,
    seen: &mut HashMap<String, &'a str>,
) -> Result<(), ColumnsError> {
    if field.is_empty() || field.contains('/') || !field.is_ascii() || field.starts_with("__") {
        return Err(ColumnsError::FieldName(name.to_string()));
    }
    if let Some(other) = seen.insert(field.to_string(), name) {
        return Err(ColumnsError::CaseClash {
            other: other.to_string(),
            name: name.to_string(),
        });
    }
    Ok(())
}

/// The encodings our writers take for the fields, by field name.
pub(super) fn suggested(shards: &[Shard]) -> std::collections::BTreeMap<String, Encoding> {
    let mut out = std::collections::BTreeMap::new();
    for shard in shards {
        let set = &shard.columns;
        for &i in &set.fields {
            let column = &set.columns[i];
            out.entry(column.field.to_string())
                .or_insert_with(|| column.kind.suggested());
        }
    }
    out
}
