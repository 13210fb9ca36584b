//! The Arrow IPC footer of a LitData chunk ([`crate::litdata::chunk`] has its layout):
//! its record batches read back ([`read`]) and each pytree leaf's values found in them
//! ([`FooterRows`]), as the bytes LitData's serializer of that leaf stores, so that the
//! input turns them into fields by the same rules as items stored the usual way.
//!
//! A leaf is a top-level column by its name, or a child of a struct column by its path
//! (`meta.a` is child `a` of struct `meta`, as `litdata.optimize` writes a nested dict).
//! Stored bytes by Arrow type: strings and binaries their bytes (as
//! [`crate::arrow_values::value_bytes`] gives them), `int64` eight bytes and `double`
//! eight bytes little-endian (LitData's `int` and `float`), `bool` one byte, a list or
//! struct column (a `json` leaf: a list, or a dict of lists) the JSON text
//! [`value_bytes`] gives it. A null (a key the row lacks, or a null struct above it) is
//! no value.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_ipc::reader::{FileReader, read_footer_length};
use arrow_ipc::root_as_footer;
use arrow_schema::{DataType, Fields};

use crate::arrow_values::value_bytes;
use crate::ipc_guard;
use crate::parquet::nested;

/// Why a footer cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FooterError {
    /// Not an Arrow IPC file, or a damaged one.
    #[error("its Arrow footer is no readable Arrow IPC file: {0}")]
    Ipc(String),
    /// Rows other than the chunk's items.
    #[error("its Arrow footer holds {rows} rows, the chunk {items} items")]
    Rows {
        /// Rows of the footer.
        rows: u64,
        /// Items of the chunk.
        items: u64,
    },
    /// No column (or struct child) for a leaf.
    #[error("its Arrow footer has no column for leaf `{0}`")]
    NoColumn(String),
    /// A column of a type no LitData serializer of the footer stores.
    #[error(
        "its Arrow footer holds leaf `{leaf}` as Arrow {data_type}, which shardsmith does not read (string, binary, int64, double, bool, lists and structs)"
    )]
    Type {
        /// The leaf.
        leaf: String,
        /// Its Arrow type.
        data_type: DataType,
    },
}

/// The record batches of the Arrow IPC file `ipc`. arrow-ipc panics on some damage (a
/// buffer past its batch's body); that is an error here too.
pub fn read(ipc: &[u8]) -> Result<Vec<RecordBatch>, FooterError> {
    check_lengths(ipc)?;
    crate::parquet::caught(|| {
        let reader = FileReader::try_new(Cursor::new(ipc), None)
            .map_err(|e| FooterError::Ipc(e.to_string()))?;
        reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| FooterError::Ipc(e.to_string()))
    })
    .unwrap_or_else(|why| Err(FooterError::Ipc(format!("the Arrow reader failed: {why}"))))
}

/// Refuses an IPC file whose footer, or a block (record batch, dictionary) its footer
/// lists, does not lie inside it: arrow-ipc's `FileReader` allocates each stated length
/// before it reads and finds the file short, so a few damaged bytes would ask for
/// gigabytes. The same holds for the uncompressed lengths of IPC-compressed buffers,
/// which may add up to the decode limit per batch. What this does not parse,
/// `FileReader` refuses.
fn check_lengths(ipc: &[u8]) -> Result<(), FooterError> {
    let Some(&tail) = ipc.last_chunk::<10>() else {
        return Ok(());
    };
    let Ok(footer_len) = read_footer_length(tail) else {
        return Ok(());
    };
    let Some(start) = (ipc.len() - 10).checked_sub(footer_len) else {
        return Err(FooterError::Ipc(format!(
            "its IPC footer says it is {footer_len} bytes, more than the file's {}",
            ipc.len()
        )));
    };
    let Ok(footer) = root_as_footer(&ipc[start..ipc.len() - 10]) else {
        return Ok(());
    };
    let blocks = footer.recordBatches().into_iter().flatten();
    for block in blocks.chain(footer.dictionaries().into_iter().flatten()) {
        let end = i128::from(block.offset())
            + i128::from(block.metaDataLength())
            + i128::from(block.bodyLength());
        if block.offset() < 0
            || block.metaDataLength() < 0
            || block.bodyLength() < 0
            || end > start as i128
        {
            return Err(FooterError::Ipc(format!(
                "its IPC footer lists a block at offset {} of {} + {} bytes, past the data's end ({start} bytes)",
                block.offset(),
                block.metaDataLength(),
                block.bodyLength()
            )));
        }
        // Inside the data, checked above.
        let at = block.offset() as usize;
        let body_at = at + block.metaDataLength() as usize;
        let body_end = body_at + block.bodyLength() as usize;
        let body = &ipc[body_at..body_end];
        let Some(message) = ipc_guard::block_message(&ipc[at..body_end]) else {
            continue;
        };
        let stated = ipc_guard::compressed_total(&message, body);
        let limit = crate::parquet::decode_limit();
        if stated > limit {
            return Err(FooterError::Ipc(format!(
                "a record batch at offset {} states {stated} bytes uncompressed, more than the decode limit of {limit} bytes (SHARDSMITH_PARQUET_DECODE_LIMIT raises it)",
                block.offset()
            )));
        }
    }
    Ok(())
}

/// The values of some leaves, row by row, from a footer's batches.
pub struct FooterRows {
    /// Per leaf, per batch: the arrays from the top-level column down to the leaf's.
    columns: Vec<Vec<Vec<ArrayRef>>>,
    /// (batch, row in it) of every row.
    rows: Vec<(usize, usize)>,
}

fn find(fields: &Fields, arrays: &[ArrayRef], path: &str, out: &mut Vec<ArrayRef>) -> bool {
    for (field, array) in fields.iter().zip(arrays) {
        if field.name() == path {
            out.push(array.clone());
            return true;
        }
        let rest = path
            .strip_prefix(field.name().as_str())
            .and_then(|r| r.strip_prefix('.'));
        if let (Some(rest), Some(s)) = (rest, array.as_struct_opt()) {
            out.push(array.clone());
            if find(s.fields(), s.columns(), rest, out) {
                return true;
            }
            out.pop();
        }
    }
    false
}

impl FooterRows {
    /// The values of `leaves` (pytree paths) in `batches`, which must hold `items` rows.
    pub fn new(batches: &[RecordBatch], leaves: &[&str], items: u64) -> Result<Self, FooterError> {
        // Counted before they are listed: a batch of no column may claim any row count.
        let count = batches
            .iter()
            .try_fold(0u64, |n, b| n.checked_add(b.num_rows() as u64));
        if count != Some(items) {
            return Err(FooterError::Rows {
                rows: count.unwrap_or(u64::MAX),
                items,
            });
        }
        let rows: Vec<(usize, usize)> = batches
            .iter()
            .enumerate()
            .flat_map(|(b, batch)| (0..batch.num_rows()).map(move |r| (b, r)))
            .collect();
        let mut columns = Vec::with_capacity(leaves.len());
        for leaf in leaves {
            let mut per_batch = Vec::with_capacity(batches.len());
            for batch in batches {
                let mut path = Vec::new();
                if !find(batch.schema().fields(), batch.columns(), leaf, &mut path) {
                    return Err(FooterError::NoColumn((*leaf).to_string()));
                }
                let data_type = path.last().expect("found").data_type().clone();
                if !nested::is_nested(&data_type)
                    && !matches!(
                        data_type,
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Utf8View
                            | DataType::Binary
                            | DataType::LargeBinary
                            | DataType::BinaryView
                            | DataType::Int64
                            | DataType::Float64
                            | DataType::Boolean
                    )
                {
                    return Err(FooterError::Type {
                        leaf: (*leaf).to_string(),
                        data_type,
                    });
                }
                per_batch.push(path);
            }
            columns.push(per_batch);
        }
        Ok(Self { columns, rows })
    }

    /// The Arrow type of leaf `leaf` (`None` when there are no rows).
    pub fn data_type(&self, leaf: usize) -> Option<&DataType> {
        self.columns[leaf]
            .first()
            .and_then(|path| path.last())
            .map(|a| a.data_type())
    }

    /// The stored bytes of leaf `leaf` of row `row`, `None` for a null.
    pub fn stored(&self, leaf: usize, row: u64) -> Option<Vec<u8>> {
        let (batch, r) = self.rows[row as usize];
        let path = &self.columns[leaf][batch];
        if path.iter().any(|a| a.is_null(r)) {
            return None;
        }
        let array = path.last().expect("found");
        match array.data_type() {
            DataType::Int64 => Some(
                array
                    .as_primitive::<Int64Type>()
                    .value(r)
                    .to_le_bytes()
                    .to_vec(),
            ),
            DataType::Float64 => Some(
                array
                    .as_primitive::<Float64Type>()
                    .value(r)
                    .to_le_bytes()
                    .to_vec(),
            ),
            DataType::Boolean => Some(vec![u8::from(array.as_boolean().value(r))]),
            _ => value_bytes(array, r, None).ok().flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        BooleanArray, Float64Array, Int32Array, Int64Array, StringArray, StructArray,
    };
    use arrow_ipc::writer::FileWriter;
    use arrow_schema::Field;

    use super::*;

    fn ipc(batch: &RecordBatch) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = FileWriter::try_new(&mut out, &batch.schema()).unwrap();
        w.write(batch).unwrap();
        w.finish().unwrap();
        drop(w);
        out
    }

    #[test]
    fn leaves_are_found_by_path_and_nulls_are_no_value() {
        let meta = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b.c", DataType::Boolean, true)),
                Arc::new(BooleanArray::from(vec![true, false])) as ArrayRef,
            ),
        ]);
        let batch = RecordBatch::try_from_iter([
            (
                "__key__",
                Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef,
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![0.5, -1.0])) as ArrayRef,
            ),
            ("meta", Arc::new(meta) as ArrayRef),
            ("i", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
        ])
        .unwrap();
        let batches = read(&ipc(&batch)).unwrap();
        let rows = FooterRows::new(&batches, &["__key__", "f", "meta.a", "meta.b.c"], 2).unwrap();
        assert_eq!(rows.stored(0, 1).unwrap(), b"y");
        assert_eq!(rows.stored(1, 0).unwrap(), 0.5f64.to_le_bytes());
        assert_eq!(rows.stored(2, 0).unwrap(), 1i64.to_le_bytes());
        assert_eq!(rows.stored(2, 1), None);
        assert_eq!(rows.stored(3, 0).unwrap(), [1]);
        assert_eq!(rows.data_type(2), Some(&DataType::Int64));
        assert!(matches!(
            FooterRows::new(&batches, &["meta.z"], 2),
            Err(FooterError::NoColumn(l)) if l == "meta.z"
        ));
        let structs = FooterRows::new(&batches, &["meta"], 2).unwrap();
        assert_eq!(structs.stored(0, 0).unwrap(), br#"{"a":1,"b.c":true}"#);
        assert!(matches!(
            FooterRows::new(&batches, &["i"], 2),
            Err(FooterError::Type { .. })
        ));
        assert!(matches!(
            FooterRows::new(&batches, &[], 3),
            Err(FooterError::Rows { rows: 2, items: 3 })
        ));
        assert!(matches!(
            read(b"ARROW1\0\0ARROW1"),
            Err(FooterError::Ipc(_))
        ));
    }

    #[test]
    fn a_damaged_footer_is_an_error_not_a_panic() {
        // Found by the litdata_input fuzz target: arrow-ipc 60 slices a batch's buffers
        // out of its body by the offsets the file states, and panics on one past the
        // body's end. Every byte of a good footer, damaged in turn, reads or is refused.
        let batch = RecordBatch::try_from_iter([
            (
                "__key__",
                Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef,
            ),
            ("n", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        ])
        .unwrap();
        let good = ipc(&batch);
        let mut refused = 0;
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] = bad[at].wrapping_add(0xa4);
            refused += usize::from(read(&bad).is_err());
        }
        assert!(refused > 0);
    }

    #[test]
    fn an_ipc_compressed_buffer_stating_more_than_the_decode_limit_is_refused() {
        // Found by the litdata fuzz targets once arrow-ipc could decompress (litdata's
        // ipc_compression "zstd"): it allocates the uncompressed length a buffer states
        // before it decompresses.
        let jpg = vec![7u8; 3000];
        let batch = RecordBatch::try_from_iter([(
            "jpg",
            Arc::new(arrow_array::BinaryArray::from(vec![&jpg[..], b"x"])) as ArrayRef,
        )])
        .unwrap();
        let options = arrow_ipc::writer::IpcWriteOptions::default()
            .try_with_compression(Some(arrow_ipc::CompressionType::ZSTD))
            .unwrap();
        let mut good = Vec::new();
        let mut w = FileWriter::try_new_with_options(&mut good, &batch.schema(), options).unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        drop(w);
        assert_eq!(read(&good).unwrap()[0], batch);
        // The values buffer's prefix, 3001 bytes uncompressed: the last of the body's
        // buffers (the offsets before it end in 3001 too, followed by padding).
        let stated = 3001i64.to_le_bytes();
        let at = good.windows(8).rposition(|w| w == stated).unwrap();
        let mut bad = good.clone();
        bad[at..at + 8].copy_from_slice(&(1i64 << 60).to_le_bytes());
        let err = read(&bad).unwrap_err().to_string();
        assert!(err.contains("decode limit"), "{err}");
        // FileReader parses a block's message whatever flatbuffer length its prefix
        // states, and so must the check (found by litdata_input: a damaged length hid
        // the batch from it).
        let tail = *good.last_chunk::<10>().unwrap();
        let footer_at = good.len() - 10 - read_footer_length(tail).unwrap();
        let footer = root_as_footer(&good[footer_at..good.len() - 10]).unwrap();
        let batch_at = footer.recordBatches().unwrap().get(0).offset() as usize;
        assert_eq!(good[batch_at..batch_at + 4], [0xff; 4]);
        bad[batch_at + 4..batch_at + 8].copy_from_slice(&0x7fff_0000i32.to_le_bytes());
        let err = read(&bad).unwrap_err().to_string();
        assert!(err.contains("decode limit"), "{err}");
    }

    #[test]
    fn a_block_past_the_file_is_refused_before_it_is_read() {
        // Found by the litdata fuzz targets: arrow-ipc 60's FileReader allocates a
        // block's stated length (here 1 TiB) before reading it.
        let batch =
            RecordBatch::try_from_iter([("n", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)])
                .unwrap();
        let mut bad = ipc(&batch);
        let tail = *bad.last_chunk::<10>().unwrap();
        let start = bad.len() - 10 - read_footer_length(tail).unwrap();
        let footer = root_as_footer(&bad[start..bad.len() - 10]).unwrap();
        let block = *footer.recordBatches().unwrap().get(0);
        let mut stored = block.offset().to_le_bytes().to_vec();
        stored.extend(block.metaDataLength().to_le_bytes());
        stored.extend([0; 4]);
        let at = start
            + bad[start..]
                .windows(stored.len())
                .position(|w| w == stored)
                .unwrap()
            + stored.len();
        bad[at..at + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let Err(FooterError::Ipc(why)) = read(&bad) else {
            panic!("a block of 1 TiB was read")
        };
        assert!(why.contains("past the data's end"), "{why}");
    }

    #[test]
    fn rows_are_counted_before_they_are_listed() {
        // Found by the litdata_chunk fuzz target: batches of no column claiming 2^63
        // rows each made the row list's capacity overflow.
        use arrow_array::RecordBatchOptions;
        use arrow_schema::Schema;
        let options = RecordBatchOptions::new().with_row_count(Some(1 << 63));
        let batch =
            RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options).unwrap();
        assert!(matches!(
            FooterRows::new(&[batch.clone(), batch], &[], 3),
            Err(FooterError::Rows {
                rows: u64::MAX,
                items: 3
            })
        ));
    }
}
