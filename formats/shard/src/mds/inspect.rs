//! Verifying MDS datasets: each shard walked on its own (decompressed, header, offsets,
//! embedded config, every record's sizes, the hashes its config names), then every
//! `index.json` compared with the shards it lists ([`super::check_indices`]).

use std::io::{self, BufReader, Read};

use serde_json::Value;
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::codec::{self, Family, MdsCompression};
use super::layout::MAX_SHARD;

/// Buffers one shard (at most 4 GiB, the format's limit) and checks it at the end.
pub struct MdsInspector {
    path: String,
    family: Option<Family>,
    data: Vec<u8>,
    too_big: bool,
}

impl MdsInspector {
    /// A checker for the shard at `path`; the extension after `.mds` names its compression.
    pub fn new(path: &str) -> Self {
        let family = path
            .rsplit_once(".mds.")
            .and_then(|(_, ext)| Family::from_ext(ext));
        Self {
            path: path.to_string(),
            family,
            data: Vec::new(),
            too_big: false,
        }
    }
}

impl Inspector for MdsInspector {
    fn update(&mut self, data: &[u8]) {
        if self.data.len() as u64 + data.len() as u64 > MAX_SHARD {
            self.too_big = true;
            self.data = Vec::new();
        }
        if !self.too_big {
            self.data.extend_from_slice(data);
        }
    }

    fn finish(self: Box<Self>) -> Inspection {
        let mut inspection = Inspection {
            format: "mds".into(),
            ..Inspection::default()
        };
        let path = self.path.as_str();
        let err = |kind, at: u64, message: String| Finding::error(kind, path, message).at(at);
        if self.too_big {
            inspection.findings.push(err(
                FindingKind::BadHeader,
                0,
                "file is larger than 4 GiB, which no MDS shard can be".into(),
            ));
            return inspection;
        }
        let snappy;
        let (raw, note) = match self.family {
            None => (Raw::Plain(self.data.as_slice()), ""),
            // Raw snappy blocks have no streaming decoder; the output is bounded by the
            // block's size (see `MdsCompression::decompress`).
            Some(Family::Snappy) => {
                match MdsCompression::decompress(Family::Snappy, &self.data, MAX_SHARD) {
                    Ok(out) => {
                        snappy = out;
                        (Raw::Plain(snappy.as_slice()), DECOMPRESSED)
                    }
                    Err(e) => return self.undecompressable(inspection, Family::Snappy, &e),
                }
            }
            Some(family) => (Raw::Stream(family, self.data.as_slice()), DECOMPRESSED),
        };
        let len = match raw.len() {
            Ok(len) => len,
            Err(e) => {
                let family = self.family.expect("plain shards always have a length");
                return self.undecompressable(inspection, family, &e);
            }
        };
        let mut findings = Vec::new();
        let parsed = parse_shard(&raw, len, note, &mut |kind, at, message| {
            findings.push(err(kind, at, message))
        });
        inspection.findings = findings;
        inspection
            .facts
            .insert("raw_bytes".into(), Value::from(len));
        if let Some((samples, config)) = parsed {
            inspection.samples = Some(samples);
            let algorithms: Vec<String> = config["hashes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let mut raw_hashes = codec::MultiHasher::new(&algorithms);
            if raw.feed(&mut |block| raw_hashes.update(block)).is_ok() {
                inspection
                    .facts
                    .insert("raw_hashes".into(), raw_hashes.finish());
            }
            if self.family.is_some() {
                let mut zip_hashes = codec::MultiHasher::new(&algorithms);
                zip_hashes.update(&self.data);
                inspection
                    .facts
                    .insert("zip_bytes".into(), Value::from(self.data.len()));
                inspection
                    .facts
                    .insert("zip_hashes".into(), zip_hashes.finish());
            }
            inspection.facts.insert("config".into(), config);
        }
        inspection
    }
}

impl MdsInspector {
    fn undecompressable(
        &self,
        mut inspection: Inspection,
        family: Family,
        e: &std::io::Error,
    ) -> Inspection {
        inspection.findings.push(
            Finding::error(
                FindingKind::DecompressionFailed,
                &self.path,
                format!("does not decompress as {}: {e}", family.name()),
            )
            .at(0),
        );
        inspection
            .facts
            .insert("zip_bytes".into(), Value::from(self.data.len()));
        inspection
    }
}

const DECOMPRESSED: &str = " of the decompressed shard";

/// Most bytes of embedded config read into memory (real ones are a few hundred).
const MAX_CONFIG: u64 = 16 << 20;

/// The raw shard, read as a stream from any offset: the bytes of an uncompressed shard,
/// or a compressed one decompressed afresh for every pass. Never the whole decompressed
/// shard in memory: a few KiB of zstd can claim gigabytes.
enum Raw<'a> {
    Plain(&'a [u8]),
    Stream(Family, &'a [u8]),
}

impl Raw<'_> {
    fn open(&self) -> io::Result<Box<dyn Read + '_>> {
        Ok(match *self {
            Raw::Plain(data) => Box::new(data),
            Raw::Stream(Family::Zstd, data) => {
                Box::new(zstd::stream::read::Decoder::with_buffer(data)?)
            }
            Raw::Stream(Family::Gz, data) => Box::new(flate2::read::MultiGzDecoder::new(data)),
            Raw::Stream(Family::Bz2, data) => Box::new(bzip2::read::MultiBzDecoder::new(data)),
            Raw::Stream(Family::Br, data) => Box::new(codec::brotli_reader(data)?),
            Raw::Stream(Family::Snappy, _) => {
                return Err(io::Error::other("raw snappy has no stream decoder"));
            }
        })
    }

    /// A buffered reader from byte `at` on.
    fn open_at(&self, at: u64) -> io::Result<BufReader<Box<dyn Read + '_>>> {
        if let Raw::Plain(data) = *self {
            let at = usize::try_from(at).map_or(data.len(), |at| at.min(data.len()));
            return Ok(BufReader::new(Box::new(&data[at..])));
        }
        let mut reader = BufReader::with_capacity(1 << 16, self.open()?);
        skip(&mut reader, at)?;
        Ok(reader)
    }

    /// Decompressed size, refusing more than `MAX_SHARD` bytes.
    fn len(&self) -> io::Result<u64> {
        if let Raw::Plain(data) = *self {
            return Ok(data.len() as u64);
        }
        let n = io::copy(&mut self.open()?.take(MAX_SHARD + 1), &mut io::sink())?;
        if n > MAX_SHARD {
            return Err(io::Error::other(format!(
                "decompresses to more than {MAX_SHARD} bytes"
            )));
        }
        Ok(n)
    }

    /// Hands every byte to `f`, in blocks.
    fn feed(&self, f: &mut dyn FnMut(&[u8])) -> io::Result<()> {
        if let Raw::Plain(data) = *self {
            f(data);
            return Ok(());
        }
        let mut reader = self.open()?.take(MAX_SHARD);
        let mut block = vec![0u8; 1 << 16];
        loop {
            match reader.read(&mut block) {
                Ok(0) => return Ok(()),
                Ok(n) => f(&block[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn skip(reader: &mut impl Read, n: u64) -> io::Result<()> {
    let skipped = io::copy(&mut reader.take(n), &mut io::sink())?;
    if skipped < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

fn read_u32(reader: &mut impl Read) -> Option<u64> {
    let mut word = [0u8; 4];
    reader.read_exact(&mut word).ok()?;
    Some(u64::from(u32::from_le_bytes(word)))
}

/// Walks a raw shard of `len` bytes as a stream (memory does not grow with the sample
/// count or the shard size); returns its sample count and embedded config when the
/// header is readable.
fn parse_shard(
    raw: &Raw<'_>,
    len: u64,
    note: &str,
    report: &mut dyn FnMut(FindingKind, u64, String),
) -> Option<(u64, Value)> {
    let mut header = raw.open_at(0).ok()?;
    let Some(n) = read_u32(&mut header) else {
        report(
            FindingKind::Truncated,
            len,
            format!("shard{note} is {len} bytes, shorter than its header"),
        );
        return None;
    };
    let table_end = 4 + 4 * (n + 1);
    if table_end > len {
        report(
            FindingKind::Truncated,
            len,
            format!(
                "header{note} declares {n} samples, whose offset table ends at byte {table_end}, past the end ({len} bytes)"
            ),
        );
        return None;
    }
    let (first, last, backwards) = offset_table(&mut header, n)?;
    let config = embedded_config(&mut header, table_end, first, len, note, report)?;
    if let Some(i) = backwards {
        report(
            FindingKind::BadHeader,
            4 + 4 * (i + 1),
            format!("sample offsets{note} go backwards at sample {}", i + 1),
        );
        return Some((n, config));
    }
    check_end(len, last, note, report);
    check_records(raw, len, note, n, first, &config, report);
    Some((n, config))
}

/// The config embedded between the offset table (ending at `table_end`) and the first
/// sample (at `first`), read from `header` (positioned at `table_end`); `None` when it
/// is out of place, too large or not JSON, each reported.
fn embedded_config(
    header: &mut impl Read,
    table_end: u64,
    first: u64,
    len: u64,
    note: &str,
    report: &mut dyn FnMut(FindingKind, u64, String),
) -> Option<Value> {
    if first < table_end || first > len {
        report(
            FindingKind::BadHeader,
            4,
            format!("first sample offset{note} {first} is outside the shard ({table_end}..{len})"),
        );
        return None;
    }
    if first - table_end > MAX_CONFIG {
        report(
            FindingKind::BadHeader,
            table_end,
            format!(
                "embedded config{note} would be {} bytes, more than any MDS config",
                first - table_end
            ),
        );
        return None;
    }
    let mut text = Vec::new();
    header.take(first - table_end).read_to_end(&mut text).ok()?;
    match serde_json::from_slice(&text) {
        Ok(config) => Some(config),
        Err(e) => {
            report(
                FindingKind::BadHeader,
                table_end,
                format!("embedded config{note} is not JSON: {e}"),
            );
            None
        }
    }
}

/// Reports a shard of `len` bytes whose last sample ends at `last` elsewhere than its
/// end.
fn check_end(len: u64, last: u64, note: &str, report: &mut dyn FnMut(FindingKind, u64, String)) {
    if last > len {
        report(
            FindingKind::Truncated,
            len,
            format!("shard{note} ends at byte {len} but its last sample ends at {last}"),
        );
    } else if last < len {
        report(
            FindingKind::TrailingData,
            last,
            format!("{} bytes{note} after the last sample", len - last),
        );
    }
}

/// The offset table of `n` samples, streamed: its first and last entries and the
/// sample where it first goes backwards.
fn offset_table(header: &mut impl Read, n: u64) -> Option<(u64, u64, Option<u64>)> {
    let (mut first, mut last, mut backwards) = (0, 0, None);
    for i in 0..=n {
        let offset = read_u32(header)?;
        if i == 0 {
            first = offset;
        } else if backwards.is_none() && offset < last {
            backwards = Some(i - 1);
        }
        last = offset;
    }
    Some((first, last, backwards))
}

/// Walks the `n` records from byte `first` on, checking each record's size table against
/// its offsets; stops at the first bad record (reported) or where the shard is cut.
fn check_records(
    raw: &Raw<'_>,
    len: u64,
    note: &str,
    n: u64,
    first: u64,
    config: &Value,
    report: &mut dyn FnMut(FindingKind, u64, String),
) {
    let sizes: Vec<Option<u64>> = config["column_sizes"]
        .as_array()
        .map(|a| a.iter().map(Value::as_u64).collect())
        .unwrap_or_default();
    let variable = sizes.iter().filter(|s| s.is_none_or(|s| s == 0)).count() as u64;
    // Sizes come from the file: a sum that does not fit matches no record.
    let fixed = sizes
        .iter()
        .filter_map(|s| s.filter(|&s| s > 0))
        .fold(0u64, u64::saturating_add);
    // The records follow each other from `first` on (the offsets never go backwards):
    // one reader walks the offsets from sample 1 on, another the records.
    let (Ok(mut offsets), Ok(mut records)) = (raw.open_at(8), raw.open_at(first)) else {
        return;
    };
    let head = 4 * variable;
    let mut table = vec![0u8; head as usize];
    let mut start = first;
    for i in 0..n {
        let Some(end) = read_u32(&mut offsets) else {
            break;
        };
        if end > len {
            break; // cut by the truncation reported above
        }
        let size = end - start;
        if size < head {
            report(
                FindingKind::BadRecord,
                start,
                format!("sample {i}{note} is {size} bytes, shorter than its size table"),
            );
            break;
        }
        if records.read_exact(&mut table).is_err() {
            break;
        }
        let body: u64 = table
            .chunks_exact(4)
            .map(|w| u64::from(u32::from_le_bytes(w.try_into().expect("4 bytes"))))
            .sum();
        let total = head.saturating_add(body).saturating_add(fixed);
        if total != size {
            report(
                FindingKind::BadRecord,
                start,
                format!(
                    "sample {i}{note}: its column sizes add up to {total} bytes but the record is {size}"
                ),
            );
            break;
        }
        if skip(&mut records, size - head).is_err() {
            break;
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(name: &str, bytes: &[u8]) -> Inspection {
        let mut inspector = Box::new(MdsInspector::new(name));
        inspector.update(bytes);
        inspector.finish()
    }

    /// A zstd frame of `blocks` RLE blocks of 128 KiB of `byte`: 4 bytes each.
    fn zstd_bomb(blocks: usize, byte: u8) -> Vec<u8> {
        // Magic, a descriptor with no content size, a 128 KiB window.
        let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
        for i in 0..blocks {
            let last = u32::from(i + 1 == blocks);
            let header = ((128 << 10) << 3) | (1 << 1) | last;
            out.extend_from_slice(&header.to_le_bytes()[..3]);
            out.push(byte);
        }
        out
    }

    /// Found by fuzzing (`mds_shard`, with a larger input than the default run makes):
    /// 18 KiB of zstd decompressing to 600 MB made `verify` hold the whole decompressed
    /// shard (up to 4 GiB). The shard is now walked as a stream; the fuzz corpus keeps
    /// such a bomb, which fails the target's 256 MiB allocation limit if this returns.
    #[test]
    fn a_zstd_bomb_is_walked_as_a_stream() {
        let bomb = zstd_bomb(2048, 0);
        let inspection = inspect("shard.00000.mds.zstd", &bomb);
        assert_eq!(inspection.facts["raw_bytes"], 2048u64 << 17);
        // All zeros: no samples, the config is empty, the offsets point before it.
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::BadHeader
                    && f.message.contains("first sample offset")),
            "{:?}",
            inspection.findings
        );
        // Past the 4 GiB an MDS shard can hold: refused while counting, nothing held.
        let inspection = inspect("shard.00000.mds.zstd", &zstd_bomb(32769, 7));
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::DecompressionFailed
                    && f.message.contains("decompresses to more than")),
            "{:?}",
            inspection.findings
        );
    }

    /// Found by fuzzing (`mds_shard`): a 5-byte snappy block whose length header says
    /// 2.5 GB; the whole output was allocated from that header before decoding.
    #[test]
    fn a_snappy_length_the_block_cannot_hold_is_refused_before_allocating() {
        let inspection = inspect("shard.00000.mds.snappy", b"\xff\xb3\xff\xff\x09");
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::DecompressionFailed
                    && f.message.contains("compressed bytes can hold")),
            "{:?}",
            inspection.findings
        );
    }
}
