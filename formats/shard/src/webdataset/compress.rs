//! Compressed WebDataset shards, `PREFIX-NNNNNN.tar.gz` and `PREFIX-NNNNNN.tar.zst`: the
//! same tar, streamed through a compressor on its way to the shard's hashing writer.
//!
//! The bytes depend only on the tar and the level: gzip is one member with mtime 0, no
//! file name or comment, OS byte 255 ("unknown"); zstd is one frame from the
//! single-threaded encoder with a content checksum and without the content size (the
//! encoder never knows it: shards are streamed).

use std::io::{self, Write};

use crate::format::ShardOut;

/// Default gzip level (gzip's and Python's `tarfile` default).
pub const GZ_DEFAULT: u32 = 6;
/// Default zstd level (zstd's default).
pub const ZSTD_DEFAULT: u32 = 3;
/// The choices, as `--help` and error messages name them.
pub const CHOICES: &str = "none, gz[:1-9] or zstd[:1-22]";

/// How a WebDataset shard is compressed, with its level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarCompression {
    /// gzip, levels 1 to 9.
    Gz(u32),
    /// Zstandard, levels 1 to 22.
    Zstd(u32),
}

/// Why a text names no webdataset compression; the text is the whole message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TarCompressionError {
    /// Not `none`, `gz` or `zstd`.
    #[error("unknown webdataset compression `{0}`; use {CHOICES} (e.g. gz:6)")]
    Unknown(String),
    /// A level outside the range.
    #[error("`{text}`: {name} levels are 1 to {max}")]
    Level {
        /// What was given.
        text: String,
        /// The compression.
        name: String,
        /// Highest level.
        max: u32,
    },
}

impl TarCompression {
    /// Parses `none`, `gz`, `gz:L`, `zstd` or `zstd:L`; `Ok(None)` for no compression.
    /// The error is the whole message (`gz:0: gz levels are 1 to 9`).
    pub fn parse(text: &str) -> Result<Option<Self>, TarCompressionError> {
        if text == "none" {
            return Ok(None);
        }
        let (name, level) = match text.split_once(':') {
            Some((name, level)) => (name, Some(level)),
            None => (text, None),
        };
        let (make, default, max): (fn(u32) -> Self, u32, u32) = match name {
            "gz" => (TarCompression::Gz, GZ_DEFAULT, 9),
            "zstd" => (TarCompression::Zstd, ZSTD_DEFAULT, 22),
            _ => {
                return Err(TarCompressionError::Unknown(text.to_string()));
            }
        };
        let level = match level {
            None => default,
            Some(level) => match level.parse::<u32>() {
                Ok(l) if (1..=max).contains(&l) && !level.starts_with('+') => l,
                _ => {
                    return Err(TarCompressionError::Level {
                        text: text.to_string(),
                        name: name.to_string(),
                        max,
                    });
                }
            },
        };
        Ok(Some(make(level)))
    }

    /// The name recorded in the manifest, level always included (`gz:6`), so `gz` and
    /// `gz:6` record the same dataset.
    pub fn name(&self) -> String {
        match self {
            TarCompression::Gz(level) => format!("gz:{level}"),
            TarCompression::Zstd(level) => format!("zstd:{level}"),
        }
    }

    /// The shard file extension.
    pub fn extension(&self) -> &'static str {
        match self {
            TarCompression::Gz(_) => "tar.gz",
            TarCompression::Zstd(_) => "tar.zst",
        }
    }

    /// A compressor writing into `out`.
    pub(crate) fn writer(&self, out: ShardOut) -> io::Result<Compressor> {
        let encoder = match *self {
            TarCompression::Gz(level) => Encoder::Gz(
                flate2::GzBuilder::new()
                    .mtime(0)
                    .operating_system(255)
                    .write(out, flate2::Compression::new(level)),
            ),
            TarCompression::Zstd(level) => {
                let mut encoder = zstd::stream::write::Encoder::new(out, level as i32)?;
                encoder.include_checksum(true)?;
                encoder.include_contentsize(false)?;
                encoder.include_dictid(false)?;
                Encoder::Zstd(encoder)
            }
        };
        Ok(Compressor {
            encoder,
            buf: Vec::with_capacity(CHUNK),
        })
    }
}

/// Bytes handed to the encoder at a time.
const CHUNK: usize = 64 << 10;

/// A compressing writer in front of a shard's output. The encoder always gets the tar
/// in the same pieces, [`CHUNK`] bytes from multiples of [`CHUNK`] (the last one
/// shorter), whatever sizes it is written in: deflate's output depends on them (written
/// a byte at a time, a stream differs from the same bytes written at once), and the
/// sizes of a sample's writes depend on how its file was read.
pub(crate) struct Compressor {
    encoder: Encoder,
    buf: Vec<u8>,
}

enum Encoder {
    Gz(flate2::write::GzEncoder<ShardOut>),
    Zstd(zstd::stream::write::Encoder<'static, ShardOut>),
}

impl Encoder {
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Encoder::Gz(w) => w.write_all(data),
            Encoder::Zstd(w) => w.write_all(data),
        }
    }
}

impl Compressor {
    /// Compresses what is still buffered and writes the stream's end (gzip trailer,
    /// zstd frame end and checksum); the output is released.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.encoder.write_all(&self.buf)?;
        match self.encoder {
            Encoder::Gz(encoder) => encoder.finish().map(drop),
            Encoder::Zstd(encoder) => encoder.finish().map(drop),
        }
    }
}

impl Write for Compressor {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.buf.is_empty() && data.len() >= CHUNK {
                self.encoder.write_all(&data[..CHUNK])?;
                data = &data[CHUNK..];
                continue;
            }
            let take = (CHUNK - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == CHUNK {
                self.encoder.write_all(&self.buf)?;
                self.buf.clear();
            }
        }
        Ok(())
    }

    /// Does nothing: a compressor's flush ends a block early and changes the bytes.
    /// Everything reaches the output in [`Compressor::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn levels_parse_with_defaults_and_exact_errors() {
        assert_eq!(TarCompression::parse("none"), Ok(None));
        assert_eq!(TarCompression::parse("gz"), Ok(Some(TarCompression::Gz(6))));
        assert_eq!(
            TarCompression::parse("gz:1"),
            Ok(Some(TarCompression::Gz(1)))
        );
        assert_eq!(
            TarCompression::parse("gz:9"),
            Ok(Some(TarCompression::Gz(9)))
        );
        assert_eq!(
            TarCompression::parse("zstd"),
            Ok(Some(TarCompression::Zstd(3)))
        );
        assert_eq!(
            TarCompression::parse("zstd:22"),
            Ok(Some(TarCompression::Zstd(22)))
        );
        for (text, error) in [
            ("gz:0", "`gz:0`: gz levels are 1 to 9"),
            ("gz:10", "`gz:10`: gz levels are 1 to 9"),
            ("gz:", "`gz:`: gz levels are 1 to 9"),
            ("gz:+5", "`gz:+5`: gz levels are 1 to 9"),
            ("gz:fast", "`gz:fast`: gz levels are 1 to 9"),
            ("zstd:0", "`zstd:0`: zstd levels are 1 to 22"),
            ("zstd:23", "`zstd:23`: zstd levels are 1 to 22"),
            ("zstd:-1", "`zstd:-1`: zstd levels are 1 to 22"),
            (
                "bz2",
                "unknown webdataset compression `bz2`; use none, gz[:1-9] or zstd[:1-22] (e.g. gz:6)",
            ),
            (
                "zst",
                "unknown webdataset compression `zst`; use none, gz[:1-9] or zstd[:1-22] (e.g. gz:6)",
            ),
            (
                "none:1",
                "unknown webdataset compression `none:1`; use none, gz[:1-9] or zstd[:1-22] (e.g. gz:6)",
            ),
        ] {
            assert_eq!(
                TarCompression::parse(text).map_err(|e| e.to_string()),
                Err(error.to_string()),
                "{text}"
            );
        }
        assert_eq!(TarCompression::Gz(6).name(), "gz:6");
        assert_eq!(TarCompression::Zstd(19).name(), "zstd:19");
        assert_eq!(TarCompression::Zstd(3).extension(), "tar.zst");
    }

    fn compress(compression: TarCompression, data: &[u8], piece: usize) -> Vec<u8> {
        let (out, bytes) = ShardOut::memory();
        let mut writer = compression.writer(out).unwrap();
        for chunk in data.chunks(piece) {
            writer.write_all(chunk).unwrap();
        }
        writer.finish().unwrap();
        bytes.lock().unwrap().clone()
    }

    fn sample_data() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn gzip_header_is_fixed() {
        for (level, xfl) in [(1, 4u8), (6, 0), (9, 2)] {
            let gz = compress(TarCompression::Gz(level), b"abc", 3);
            // Magic, deflate, no flags (no name, comment, extra), mtime 0, XFL, OS 255.
            assert_eq!(
                gz[..10],
                [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 255],
                "{level}"
            );
        }
    }

    #[test]
    fn zstd_frame_has_a_checksum_and_no_content_size() {
        let zst = compress(TarCompression::Zstd(3), b"abc", 3);
        assert_eq!(zst[..4], [0x28, 0xb5, 0x2f, 0xfd]);
        let descriptor = zst[4];
        assert_eq!(descriptor >> 6, 0, "no content size field");
        assert_eq!(descriptor & 0b100, 0b100, "content checksum flag");
        assert_eq!(descriptor & 0b11, 0, "no dictionary id");
    }

    #[test]
    fn round_trips_and_bytes_do_not_depend_on_write_sizes() {
        let data = sample_data();
        for compression in [
            TarCompression::Gz(1),
            TarCompression::Gz(6),
            TarCompression::Zstd(3),
            TarCompression::Zstd(19),
        ] {
            let whole = compress(compression, &data, data.len());
            for piece in [1usize, 511, 65_536, 100_000] {
                assert_eq!(
                    compress(compression, &data[..300_000], piece),
                    compress(compression, &data[..300_000], 300_000),
                    "{compression:?} in pieces of {piece}"
                );
            }
            assert!(whole.len() < data.len() / 4, "{compression:?} compresses");
            let mut back = Vec::new();
            match compression {
                TarCompression::Gz(_) => {
                    flate2::read::GzDecoder::new(&whole[..])
                        .read_to_end(&mut back)
                        .unwrap();
                }
                TarCompression::Zstd(_) => {
                    zstd::stream::read::Decoder::new(&whole[..])
                        .unwrap()
                        .read_to_end(&mut back)
                        .unwrap();
                }
            }
            assert_eq!(back, data, "{compression:?}");
        }
    }
}
