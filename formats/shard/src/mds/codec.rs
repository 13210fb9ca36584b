//! Shard compression and hash algorithms, named exactly as MosaicML Streaming names them
//! (`zstd:7`, `xxh64`), so `index.json` means the same thing to its readers.

use std::io::{Read, Write};

use digest::Digest;

pub use super::codec_error::{CompressionError, UnknownHash};

/// A compression family and level (`zstd:7`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MdsCompression {
    /// The family, which is also the file extension.
    pub family: Family,
    /// The level as given (`None`: the family's default, not written in the name).
    pub level: Option<u32>,
}

/// MdsCompression families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Brotli, levels 0–11 (default 11).
    Br,
    /// bzip2, levels 1–9 (default 9).
    Bz2,
    /// gzip, levels 0–9 (default 9).
    Gz,
    /// Raw snappy blocks, no levels.
    Snappy,
    /// Zstandard, levels 1–22 (default 3).
    Zstd,
}

impl Family {
    /// Name and file extension.
    pub fn name(self) -> &'static str {
        match self {
            Family::Br => "br",
            Family::Bz2 => "bz2",
            Family::Gz => "gz",
            Family::Snappy => "snappy",
            Family::Zstd => "zstd",
        }
    }

    fn levels(self) -> Option<(u32, u32, u32)> {
        match self {
            Family::Br => Some((0, 11, 11)),
            Family::Bz2 => Some((1, 9, 9)),
            Family::Gz => Some((0, 9, 9)),
            Family::Snappy => None,
            Family::Zstd => Some((1, 22, 3)),
        }
    }

    /// The family a file extension names.
    pub fn from_ext(ext: &str) -> Option<Self> {
        [
            Family::Br,
            Family::Bz2,
            Family::Gz,
            Family::Snappy,
            Family::Zstd,
        ]
        .into_iter()
        .find(|f| f.name() == ext)
    }
}

impl MdsCompression {
    /// Parses `none`, `FAMILY` or `FAMILY:LEVEL`; `Ok(None)` for no compression.
    pub fn parse(text: &str) -> Result<Option<Self>, CompressionError> {
        if text == "none" {
            return Ok(None);
        }
        let (name, level) = match text.split_once(':') {
            Some((n, l)) => (n, Some(l)),
            None => (text, None),
        };
        let family =
            Family::from_ext(name).ok_or_else(|| CompressionError::Unknown(name.to_string()))?;
        let level = match (level, family.levels()) {
            (None, _) => None,
            (Some(_), None) => return Err(CompressionError::NoLevels(name.to_string())),
            (Some(l), Some((lo, hi, _))) => {
                let l: u32 = l
                    .parse()
                    .map_err(|_| CompressionError::LevelSyntax(l.to_string()))?;
                if !(lo..=hi).contains(&l) {
                    return Err(CompressionError::Level {
                        name: name.to_string(),
                        lo,
                        hi,
                    });
                }
                Some(l)
            }
        };
        Ok(Some(MdsCompression { family, level }))
    }

    /// The name as recorded in `index.json` (`zstd`, `zstd:7`).
    pub fn name(&self) -> String {
        match self.level {
            Some(level) => format!("{}:{level}", self.family.name()),
            None => self.family.name().to_string(),
        }
    }

    fn level(&self) -> u32 {
        self.level
            .or(self.family.levels().map(|l| l.2))
            .unwrap_or(0)
    }

    /// Compresses a whole shard.
    pub fn compress(&self, data: &[u8]) -> std::io::Result<Vec<u8>> {
        let level = self.level();
        match self.family {
            Family::Zstd => zstd::bulk::compress(data, level as i32),
            Family::Snappy => snap::raw::Encoder::new()
                .compress_vec(data)
                .map_err(std::io::Error::other),
            Family::Gz => {
                let mut encoder = flate2::GzBuilder::new()
                    .mtime(0)
                    .write(Vec::new(), flate2::Compression::new(level));
                encoder.write_all(data)?;
                encoder.finish()
            }
            Family::Bz2 => {
                let mut encoder =
                    bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
                encoder.write_all(data)?;
                encoder.finish()
            }
            Family::Br => {
                let mut out = Vec::new();
                {
                    let mut writer = brotli::CompressorWriter::new(&mut out, 1 << 16, level, 22);
                    writer.write_all(data)?;
                }
                Ok(out)
            }
        }
    }

    /// Decompresses a whole shard, refusing to produce more than `limit` bytes (a
    /// hostile or damaged frame cannot make us allocate without bound).
    pub fn decompress(family: Family, data: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
        let too_big = || std::io::Error::other(format!("decompresses to more than {limit} bytes"));
        let mut out = Vec::new();
        let read_limited = |reader: &mut dyn Read, out: &mut Vec<u8>| -> std::io::Result<()> {
            reader.take(limit + 1).read_to_end(out)?;
            if out.len() as u64 > limit {
                return Err(too_big());
            }
            Ok(())
        };
        match family {
            Family::Zstd => read_limited(&mut zstd::stream::read::Decoder::new(data)?, &mut out)?,
            Family::Gz => read_limited(&mut flate2::read::MultiGzDecoder::new(data), &mut out)?,
            Family::Bz2 => read_limited(&mut bzip2::read::MultiBzDecoder::new(data), &mut out)?,
            Family::Br => read_limited(&mut brotli_reader(data)?, &mut out)?,
            Family::Snappy => {
                // The block's length header is untrusted and the whole output is
                // allocated from it: check it against what the block can produce (no
                // snappy element expands by more than 64/3: a 3-byte copy of 64 bytes).
                let len = snap::raw::decompress_len(data).map_err(std::io::Error::other)?;
                if len as u64 > limit {
                    return Err(too_big());
                }
                if len as u64 > MAX_SNAPPY_RATIO * data.len() as u64 {
                    return Err(std::io::Error::other(format!(
                        "the header says {len} bytes, more than {} compressed bytes can hold",
                        data.len()
                    )));
                }
                out = snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(std::io::Error::other)?;
            }
        }
        Ok(out)
    }
}

/// A brotli decoder over `data`, refusing a large-window stream (RFC 7932 allows
/// windows up to 16 MiB; the large-window extension asks for up to 1 GiB, which the
/// decoder allocates before reading a single block). Python's `brotli`, which
/// Streaming decompresses with, does not read such streams either.
pub fn brotli_reader(data: &[u8]) -> std::io::Result<brotli::Decompressor<&[u8]>> {
    // The window bits open the stream, least significant bit first: 1, 000, 001 is
    // the large-window marker (0x11 in the low seven bits of the first byte).
    if data.first().is_some_and(|b| b & 0x7f == 0x11) {
        let bits = data.get(1).map_or(0, |b| b & 0x3f);
        return Err(std::io::Error::other(format!(
            "a large-window brotli stream (window of 2^{bits} bytes), which standard \
             brotli decoders, Python's among them, do not read"
        )));
    }
    Ok(brotli::Decompressor::new(data, 1 << 16))
}

/// Most bytes one byte of a raw snappy block can decompress to (rounded up from 64/3).
const MAX_SNAPPY_RATIO: u64 = 22;

/// The hash algorithms MDS datasets record (every name Streaming accepts that a
/// well-kept Rust crate computes).
pub const HASHES: [&str; 17] = [
    "blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384", "sha3_224", "sha3_256",
    "sha3_384", "sha3_512", "sha512", "xxh128", "xxh32", "xxh3_128", "xxh3_64", "xxh64",
];

/// Parses a comma-separated list of hash names; returns them sorted and unique, as
/// MDSWriter requires.
pub fn parse_hashes(text: &str) -> Result<Vec<String>, UnknownHash> {
    let mut names = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !HASHES.contains(&name) {
            return Err(UnknownHash {
                name: name.to_string(),
                known: &HASHES,
            });
        }
        names.push(name.to_string());
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Hex digest of `data` with a named algorithm, as Python's `hexdigest()` prints it
/// (xxhash values as big-endian hex of the integer, seed 0).
pub fn hash_hex(name: &str, data: &[u8]) -> Option<String> {
    hash_parts(name, &[data])
}

/// [`hash_hex`] of the concatenation of `parts`, without concatenating them.
pub fn hash_parts(name: &str, parts: &[&[u8]]) -> Option<String> {
    fn hex<D: Digest>(parts: &[&[u8]]) -> String {
        let mut d = D::new();
        for part in parts {
            d.update(part);
        }
        shardsmith_manifest::hex(&d.finalize())
    }
    Some(match name {
        "md5" => hex::<md5::Md5>(parts),
        "sha1" => hex::<sha1::Sha1>(parts),
        "sha224" => hex::<sha2::Sha224>(parts),
        "sha256" => hex::<sha2::Sha256>(parts),
        "sha384" => hex::<sha2::Sha384>(parts),
        "sha512" => hex::<sha2::Sha512>(parts),
        "sha3_224" => hex::<sha3::Sha3_224>(parts),
        "sha3_256" => hex::<sha3::Sha3_256>(parts),
        "sha3_384" => hex::<sha3::Sha3_384>(parts),
        "sha3_512" => hex::<sha3::Sha3_512>(parts),
        "blake2b" => hex::<blake2::Blake2b512>(parts),
        "blake2s" => hex::<blake2::Blake2s256>(parts),
        "xxh32" => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            parts.iter().for_each(|p| h.update(p));
            format!("{:08x}", h.digest())
        }
        "xxh64" => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            parts.iter().for_each(|p| h.update(p));
            format!("{:016x}", h.digest())
        }
        "xxh3_64" => {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            parts.iter().for_each(|p| h.update(p));
            format!("{:016x}", h.digest())
        }
        "xxh3_128" | "xxh128" => {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            parts.iter().for_each(|p| h.update(p));
            format!("{:032x}", h.digest128())
        }
        _ => return None,
    })
}

/// Several named hashes fed the same bytes in one pass.
pub struct MultiHasher {
    hashers: Vec<(String, Box<dyn StreamHash>)>,
}

trait StreamHash: Send {
    fn update(&mut self, data: &[u8]);
    fn hex(self: Box<Self>) -> String;
}

struct Rc<D>(D);

impl<D: Digest + Send> StreamHash for Rc<D> {
    fn update(&mut self, data: &[u8]) {
        Digest::update(&mut self.0, data);
    }
    fn hex(self: Box<Self>) -> String {
        shardsmith_manifest::hex(&self.0.finalize())
    }
}

impl StreamHash for xxhash_rust::xxh32::Xxh32 {
    fn update(&mut self, data: &[u8]) {
        xxhash_rust::xxh32::Xxh32::update(self, data);
    }
    fn hex(self: Box<Self>) -> String {
        format!("{:08x}", self.digest())
    }
}

impl StreamHash for xxhash_rust::xxh64::Xxh64 {
    fn update(&mut self, data: &[u8]) {
        xxhash_rust::xxh64::Xxh64::update(self, data);
    }
    fn hex(self: Box<Self>) -> String {
        format!("{:016x}", self.digest())
    }
}

struct Xxh3(xxhash_rust::xxh3::Xxh3, bool);

impl StreamHash for Xxh3 {
    fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }
    fn hex(self: Box<Self>) -> String {
        if self.1 {
            format!("{:032x}", self.0.digest128())
        } else {
            format!("{:016x}", self.0.digest())
        }
    }
}

impl MultiHasher {
    /// Hashers for `names` (unknown names are ignored; names are checked when parsed).
    pub fn new(names: &[String]) -> Self {
        let hashers = names
            .iter()
            .filter_map(|name| {
                let h: Box<dyn StreamHash> = match name.as_str() {
                    "md5" => Box::new(Rc(md5::Md5::new())),
                    "sha1" => Box::new(Rc(sha1::Sha1::new())),
                    "sha224" => Box::new(Rc(sha2::Sha224::new())),
                    "sha256" => Box::new(Rc(sha2::Sha256::new())),
                    "sha384" => Box::new(Rc(sha2::Sha384::new())),
                    "sha512" => Box::new(Rc(sha2::Sha512::new())),
                    "sha3_224" => Box::new(Rc(sha3::Sha3_224::new())),
                    "sha3_256" => Box::new(Rc(sha3::Sha3_256::new())),
                    "sha3_384" => Box::new(Rc(sha3::Sha3_384::new())),
                    "sha3_512" => Box::new(Rc(sha3::Sha3_512::new())),
                    "blake2b" => Box::new(Rc(blake2::Blake2b512::new())),
                    "blake2s" => Box::new(Rc(blake2::Blake2s256::new())),
                    "xxh32" => Box::new(xxhash_rust::xxh32::Xxh32::new(0)),
                    "xxh64" => Box::new(xxhash_rust::xxh64::Xxh64::new(0)),
                    "xxh3_64" => Box::new(Xxh3(xxhash_rust::xxh3::Xxh3::new(), false)),
                    "xxh3_128" | "xxh128" => Box::new(Xxh3(xxhash_rust::xxh3::Xxh3::new(), true)),
                    _ => return None,
                };
                Some((name.clone(), h))
            })
            .collect();
        Self { hashers }
    }

    /// Feeds the next bytes to every hash.
    pub fn update(&mut self, data: &[u8]) {
        for (_, h) in &mut self.hashers {
            h.update(data);
        }
    }

    /// `{name: hexdigest}` of everything fed.
    pub fn finish(self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .hashers
            .into_iter()
            .map(|(name, h)| (name, serde_json::Value::from(h.hex())))
            .collect();
        serde_json::Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_levels() {
        assert_eq!(MdsCompression::parse("none").unwrap(), None);
        let z = MdsCompression::parse("zstd:7").unwrap().unwrap();
        assert_eq!((z.family, z.name()), (Family::Zstd, "zstd:7".to_string()));
        assert_eq!(MdsCompression::parse("gz").unwrap().unwrap().name(), "gz");
        assert!(
            MdsCompression::parse("zstd:23")
                .unwrap_err()
                .to_string()
                .contains("1 to 22")
        );
        assert!(
            MdsCompression::parse("snappy:1")
                .unwrap_err()
                .to_string()
                .contains("no levels")
        );
        assert!(
            MdsCompression::parse("lz4")
                .unwrap_err()
                .to_string()
                .contains("unknown compression")
        );
    }

    #[test]
    fn a_large_window_brotli_stream_is_refused_before_its_window_is_allocated() {
        // Found by the mds_shard fuzz target: these 8 bytes made the decoder allocate
        // a 1 GiB ring buffer.
        let stream = [0x11, 0x1e, 0x32, 0, 0, 0, 0, 0x63];
        let err = MdsCompression::decompress(Family::Br, &stream, 1 << 20).unwrap_err();
        assert!(
            err.to_string()
                .contains("large-window brotli stream (window of 2^30"),
            "{err}"
        );
        // A standard stream still decodes.
        let mut packed = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut packed, 1 << 16, 5, 22);
            w.write_all(b"hello brotli").unwrap();
        }
        let out = MdsCompression::decompress(Family::Br, &packed, 1 << 20).unwrap();
        assert_eq!(out, b"hello brotli");
    }

    #[test]
    fn every_family_round_trips_and_bombs_are_refused() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for name in ["zstd", "zstd:19", "gz:1", "bz2", "br:5", "snappy"] {
            let c = MdsCompression::parse(name).unwrap().unwrap();
            let packed = c.compress(&data).unwrap();
            assert!(packed.len() < data.len(), "{name}");
            assert_eq!(
                MdsCompression::decompress(c.family, &packed, data.len() as u64).unwrap(),
                data,
                "{name}"
            );
            assert!(
                MdsCompression::decompress(c.family, &packed, 1000).is_err(),
                "{name}: limit"
            );
        }
    }

    #[test]
    fn hashes_match_python_check_values() {
        assert_eq!(hash_hex("xxh64", b"abc").unwrap(), "44bc2cf5ad770999");
        assert_eq!(hash_hex("xxh3_64", b"abc").unwrap(), "78af5f94892f3950");
        assert_eq!(
            hash_hex("sha1", b"abc").unwrap(),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(hash_hex("xxh128", b"abc"), hash_hex("xxh3_128", b"abc"));
        for name in HASHES {
            assert_eq!(
                hash_parts(name, &[b"a", b"", b"bc"]),
                hash_hex(name, b"abc"),
                "{name}"
            );
        }
        assert_eq!(parse_hashes("xxh64, sha1,sha1").unwrap(), ["sha1", "xxh64"]);
        assert!(parse_hashes("crc32").is_err());
        for name in HASHES {
            assert!(hash_hex(name, b"x").is_some(), "{name}");
        }
    }
}
