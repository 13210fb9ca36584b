//! The two ways an MDS shard is encoded: streamed against its plan (uncompressed shards,
//! nothing buffered) or built in memory (compressed shards, and the fallback when a
//! sample left the plan).

use std::io::{self, Read, Write};
use std::sync::Arc;

use serde_json::{Value, json};

use super::codec;
use super::layout::{Layout, MAX_SHARD};
use crate::format::{Field, Payload, PlanBroken, ShardEncoder, ShardOut};

/// Appends one sample's record (sizes of the variable columns, then every column) to `out`.
fn encode_record(
    layout: &Layout,
    key: &str,
    fields: &mut [Field<'_>],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    // Streamed (large) fields are read in full first; MDS builds shards in memory.
    let mut streamed: Vec<Option<Vec<u8>>> = Vec::with_capacity(fields.len());
    for field in fields.iter_mut() {
        streamed.push(match &mut field.payload {
            Payload::Bytes(_) => None,
            Payload::Stream(reader) => {
                let mut data = Vec::with_capacity(usize::try_from(field.size).unwrap_or(0));
                reader.take(field.size).read_to_end(&mut data)?;
                Some(data)
            }
        });
    }
    let mut values: Vec<std::borrow::Cow<'_, [u8]>> = Vec::with_capacity(layout.columns.len());
    let mut next = fields.iter().zip(&streamed);
    for column in &layout.columns {
        if column.is_key {
            values.push(key.as_bytes().into());
            continue;
        }
        let (field, owned) = next
            .next()
            .filter(|(f, _)| f.ext == column.name)
            .ok_or_else(|| {
                io::Error::other(format!("sample `{key}` lacks column `{}`", column.name))
            })?;
        let encoded = match (owned, &field.payload) {
            // In-memory values were checked by `check_values` before encoding.
            (None, Payload::Bytes(bytes)) => column.encoding.convert(bytes),
            (Some(data), _) => column.encoding.encode(data),
            (None, Payload::Stream(_)) => unreachable!("streamed fields were read above"),
        }
        .map_err(|e| io::Error::other(format!("sample `{key}` field `{}` {e}", column.name)))?;
        if let Some(fixed) = column.fixed
            && encoded.len() as u64 != fixed
        {
            return Err(io::Error::other(format!(
                "sample `{key}` field `{}` encodes to {} bytes, not {fixed}",
                column.name,
                encoded.len()
            )));
        }
        values.push(encoded);
    }
    for (column, value) in layout.columns.iter().zip(&values) {
        if column.fixed.is_none() {
            out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        }
    }
    for value in &values {
        out.extend_from_slice(value);
    }
    Ok(())
}

/// An uncompressed shard streamed against its plan: the header (sample count, offsets,
/// config) is written first from the planned record sizes, then each record as it comes,
/// hashed on the way. Nothing is buffered; any departure from the plan is [`PlanBroken`].
pub(super) struct StreamingEncoder {
    pub(super) layout: Arc<Layout>,
    pub(super) planned: Vec<(String, u64)>,
    pub(super) next: usize,
    pub(super) hasher: Option<codec::MultiHasher>,
    pub(super) record: Vec<u8>,
}

impl ShardEncoder for StreamingEncoder {
    fn add(&mut self, out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        let Some((planned_key, planned_len)) = self.planned.get(self.next) else {
            return Err(PlanBroken::io());
        };
        if planned_key != key {
            return Err(PlanBroken::io());
        }
        if self.hasher.is_none() {
            let header = header(&self.layout, self.planned.iter().map(|p| p.1))?;
            let mut hasher = codec::MultiHasher::new(&self.layout.hashes);
            hasher.update(&header);
            out.write_all(&header)?;
            self.hasher = Some(hasher);
        }
        self.record.clear();
        encode_record(&self.layout, key, fields, &mut self.record)?;
        if self.record.len() as u64 != *planned_len {
            return Err(PlanBroken::io());
        }
        self.hasher
            .as_mut()
            .expect("set above")
            .update(&self.record);
        out.write_all(&self.record)?;
        self.next += 1;
        Ok(())
    }

    fn finish(&mut self, _out: &mut ShardOut) -> io::Result<Value> {
        if self.next != self.planned.len() || self.hasher.is_none() {
            return Err(PlanBroken::io());
        }
        let hasher = self.hasher.take().expect("checked above");
        let records: u64 = self.planned.iter().map(|p| p.1).sum();
        let n = self.planned.len() as u64;
        let total = 4 + 4 * (n + 1) + self.layout.config_json.len() as u64 + records;
        Ok(json!({"samples": n, "raw_bytes": total, "raw_hashes": hasher.finish()}))
    }
}

/// `u32 N`, `u32 offsets[N+1]` (absolute) and the config JSON, for records of `lengths`.
fn header(layout: &Layout, lengths: impl ExactSizeIterator<Item = u64>) -> io::Result<Vec<u8>> {
    let n = lengths.len() as u64;
    let config = layout.config_json.as_bytes();
    let start = 4 + 4 * (n + 1) + config.len() as u64;
    let mut header = Vec::with_capacity(start as usize);
    header.extend_from_slice(&(n as u32).to_le_bytes());
    let mut offset = start;
    header.extend_from_slice(&(offset as u32).to_le_bytes());
    for len in lengths {
        offset += len;
        if offset > MAX_SHARD {
            return Err(io::Error::other(format!(
                "shard would be over {MAX_SHARD} bytes; MDS offsets are 32-bit"
            )));
        }
        header.extend_from_slice(&(offset as u32).to_le_bytes());
    }
    header.extend_from_slice(config);
    Ok(header)
}

pub(super) struct MdsEncoder {
    pub(super) layout: Arc<Layout>,
    pub(super) records: Vec<u8>,
    pub(super) ends: Vec<u64>,
}

impl ShardEncoder for MdsEncoder {
    fn add(&mut self, _out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        if self.records.capacity() == 0 {
            self.records
                .reserve(usize::try_from(self.layout.size_limit.min(256 << 20)).unwrap_or(0));
        }
        encode_record(&self.layout, key, fields, &mut self.records)?;
        self.ends.push(self.records.len() as u64);
        Ok(())
    }

    fn finish(&mut self, out: &mut ShardOut) -> io::Result<Value> {
        let mut previous = 0;
        let lengths = self
            .ends
            .iter()
            .map(|&end| end - std::mem::replace(&mut previous, end));
        let header = header(&self.layout, lengths)?;
        let n = self.ends.len() as u64;
        let total = header.len() as u64 + self.records.len() as u64;
        let mut facts = json!({"samples": n, "raw_bytes": total});
        // One pass over pieces small enough to stay in cache: the index hashes, the
        // manifest's SHA-256 (in `out`) and the write all read a piece while it is hot.
        const PIECE: usize = 1 << 20; // the BufWriter capacity: pieces go to write() uncopied
        let mut raw_hasher = codec::MultiHasher::new(&self.layout.hashes);
        match self.layout.compression {
            None => {
                for piece in header.chunks(PIECE).chain(self.records.chunks(PIECE)) {
                    raw_hasher.update(piece);
                    out.write_all(piece)?;
                }
                facts["raw_hashes"] = raw_hasher.finish();
                let mut records = std::mem::take(&mut self.records);
                records.clear();
                self.layout
                    .buffers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(records);
            }
            Some(compression) => {
                let mut raw = header;
                raw.extend_from_slice(&self.records);
                self.records = Vec::new();
                for piece in raw.chunks(PIECE) {
                    raw_hasher.update(piece);
                }
                facts["raw_hashes"] = raw_hasher.finish();
                let zip = compression.compress(&raw)?;
                drop(raw);
                let mut zip_hasher = codec::MultiHasher::new(&self.layout.hashes);
                for piece in zip.chunks(PIECE) {
                    zip_hasher.update(piece);
                    out.write_all(piece)?;
                }
                facts["zip_bytes"] = Value::from(zip.len());
                facts["zip_hashes"] = zip_hasher.finish();
            }
        }
        Ok(facts)
    }
}
