//! The transforms `dcp.load` applies to an item's bytes before `torch.load` reads them
//! (`_StorageInfo.transform_descriptors`, written by the stream extensions of
//! `FileSystemWriter`, torch/distributed/checkpoint/_extension.py). torch 2.15 has one:
//! `stream.zstd/1`, a zstd frame per item, read with python-zstandard's `stream_reader`
//! (the first frame only; what follows it in the item is ignored).
//!
//! Decoding is bounded: the decoder's window at most [`WINDOW_LOG_MAX`] (zstd's default
//! limit, which the reader has too, so a frame it refuses is refused here), output
//! written to an anonymous temporary file (deleted when closed) and stopped past a
//! limit the caller derives from `.metadata`, so a small item declaring a huge frame
//! costs neither memory nor unbounded disk.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

use zstd::stream::raw::{DParameter, InBuffer, Operation, OutBuffer};

/// Largest zstd window accepted, as a power of two: libzstd's default decoder limit,
/// which python-zstandard (and so `dcp.load`) keeps.
pub const WINDOW_LOG_MAX: u32 = 27;
/// Decoded bytes produced per step.
const OUT: usize = 64 << 10;
/// Stored bytes decoded at a time: a zstd error is placed within one such piece (zstd
/// does not say where in its input it failed).
const PIECE: usize = 16 << 10;
/// Stored bytes read per step when decoding from a file.
const READ: usize = 1 << 20;

/// One transform of an item's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// `stream.zstd/1`: one zstd frame.
    Zstd,
}

impl Transform {
    /// The descriptor torch records for it.
    pub fn descriptor(self) -> &'static str {
        match self {
            Transform::Zstd => "stream.zstd/1",
        }
    }
}

/// A transform descriptor this reader does not know, as `.metadata` records it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownTransform(pub String);

/// The transforms of `descriptors` in the order `dcp.load` applies them (the order
/// recorded), or the first descriptor this reader does not know. A descriptor is
/// `name[@domain]/version`; torch's ZStandard accepts any version whose major part is 1.
pub fn parse(descriptors: &[String]) -> Result<Vec<Transform>, UnknownTransform> {
    descriptors
        .iter()
        .map(|d| {
            let (name, version) = d.split_once('/').unwrap_or((d, ""));
            match (name, version.split('.').next()) {
                ("stream.zstd", Some("1")) => Ok(Transform::Zstd),
                _ => Err(UnknownTransform(d.clone())),
            }
        })
        .collect()
}

/// Why an item's bytes do not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not valid data for the transform, noticed while decoding the stored bytes
    /// `from..to` of the item (zstd does not say where exactly).
    #[error("its zstd data is invalid ({reason}), noticed in its stored bytes {from}..{to}")]
    Invalid {
        /// First stored byte (from the item's start) of the piece being decoded.
        from: u64,
        /// One past its last.
        to: u64,
        /// The decoder's words.
        reason: String,
    },
    /// The stored bytes (or an inner stream) end before the frame does.
    #[error(
        "its zstd frame is cut short: the item's {stored} stored byte(s) end before the frame does"
    )]
    Truncated {
        /// Stored bytes of the item.
        stored: u64,
    },
    /// It decodes to more than `limit` bytes.
    #[error("it decodes to more than {limit} bytes, more than .metadata allows for it")]
    TooLarge {
        /// The limit.
        limit: u64,
    },
    /// The temporary file could not be written or read, or the data file read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// An item decoded: its bytes in an anonymous temporary file.
#[derive(Debug)]
pub struct Decoded {
    /// The decoded bytes, from offset 0.
    pub file: File,
    /// How many.
    pub len: u64,
    /// Stored bytes of the item after the end of its (first) frame: ignored by the
    /// reader.
    pub trailing: u64,
}

struct Stage {
    zstd: Box<zstd::stream::raw::Decoder<'static>>,
    buf: Vec<u8>,
    ended: bool,
    trailing: u64,
}

struct Sink {
    out: BufWriter<File>,
    written: u64,
    limit: u64,
}

/// Decodes an item's stored bytes, given in pieces of any size, through its transforms.
pub struct Decoder {
    stages: Vec<Stage>,
    sink: Sink,
    error: Option<DecodeError>,
    fed: u64,
}

impl Decoder {
    /// A decoder through `transforms` (applied in order) stopping past `limit` decoded
    /// bytes.
    pub fn new(transforms: &[Transform], limit: u64) -> Result<Self, DecodeError> {
        let mut stages = Vec::new();
        for t in transforms {
            match t {
                Transform::Zstd => {
                    let mut zstd = zstd::stream::raw::Decoder::new()?;
                    zstd.set_parameter(DParameter::WindowLogMax(WINDOW_LOG_MAX))?;
                    stages.push(Stage {
                        zstd: Box::new(zstd),
                        buf: vec![0; OUT],
                        ended: false,
                        trailing: 0,
                    });
                }
            }
        }
        Ok(Self {
            stages,
            sink: Sink {
                out: BufWriter::new(tempfile::tempfile()?),
                written: 0,
                limit,
            },
            error: None,
            fed: 0,
        })
    }

    /// Feeds the next stored bytes, [`PIECE`] at a time: where the decoder fails is
    /// known within a piece, whatever sizes the bytes come in.
    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() && self.error.is_none() {
            let room = PIECE - (self.fed % PIECE as u64) as usize;
            let (piece, rest) = data.split_at(room.min(data.len()));
            let from = self.fed - self.fed % PIECE as u64;
            self.fed += piece.len() as u64;
            if let Err(e) = push(&mut self.stages, piece, &mut self.sink) {
                self.error = Some(match e {
                    DecodeError::Invalid { reason, .. } => DecodeError::Invalid {
                        from,
                        to: self.fed,
                        reason,
                    },
                    other => other,
                });
            }
            data = rest;
        }
        if !data.is_empty() {
            self.fed += data.len() as u64;
        }
    }

    /// The decoded item, once every stored byte was fed.
    pub fn finish(self) -> Result<Decoded, DecodeError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.stages.iter().any(|s| !s.ended) {
            return Err(DecodeError::Truncated { stored: self.fed });
        }
        let mut file = self.sink.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        Ok(Decoded {
            file,
            len: self.sink.written,
            trailing: self.stages.first().map_or(0, |s| s.trailing),
        })
    }
}

/// Pushes `data` through the first of `stages` and what it makes through the rest.
fn push(stages: &mut [Stage], mut data: &[u8], sink: &mut Sink) -> Result<(), DecodeError> {
    let Some((stage, rest)) = stages.split_first_mut() else {
        if sink.written.saturating_add(data.len() as u64) > sink.limit {
            return Err(DecodeError::TooLarge { limit: sink.limit });
        }
        sink.written += data.len() as u64;
        return sink.out.write_all(data).map_err(DecodeError::from);
    };
    if stage.ended {
        stage.trailing += data.len() as u64;
        return Ok(());
    }
    loop {
        let mut input = InBuffer::around(data);
        let mut output = OutBuffer::around(&mut stage.buf[..]);
        let hint = stage.zstd.run(&mut input, &mut output);
        let (used, made) = (input.pos(), output.pos());
        data = &data[used..];
        let hint = hint.map_err(|e| DecodeError::Invalid {
            from: 0,
            to: 0,
            reason: e.to_string(),
        })?;
        push(rest, &stage.buf[..made], sink)?;
        if hint == 0 {
            // The frame is decoded and flushed: the reader stops here.
            stage.ended = true;
            stage.trailing += data.len() as u64;
            return Ok(());
        }
        if data.is_empty() && made < stage.buf.len() {
            return Ok(());
        }
        if used == 0 && made == 0 {
            return Err(DecodeError::Invalid {
                from: 0,
                to: 0,
                reason: "the decoder makes no progress".into(),
            });
        }
    }
}

/// Decodes the `length` stored bytes at `offset` of `file` through `transforms`.
pub fn decode_at(
    file: &File,
    offset: u64,
    length: u64,
    transforms: &[Transform],
    limit: u64,
) -> Result<Decoded, DecodeError> {
    let mut decoder = Decoder::new(transforms, limit)?;
    let mut buf = vec![0u8; READ.min(usize::try_from(length).unwrap_or(READ))];
    let mut done = 0u64;
    while done < length {
        let n = buf
            .len()
            .min(usize::try_from(length - done).unwrap_or(usize::MAX));
        file.read_exact_at(&mut buf[..n], offset + done)?;
        decoder.update(&buf[..n]);
        if decoder.error.is_some() {
            break;
        }
        done += n as u64;
    }
    decoder.finish()
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn decode(stored: &[u8], transforms: &[Transform], limit: u64) -> Result<Decoded, DecodeError> {
        let mut d = Decoder::new(transforms, limit).unwrap();
        // Pieces of every size: the result never depends on how the bytes come.
        for piece in stored.chunks(7) {
            d.update(piece);
        }
        d.finish()
    }

    fn bytes(mut d: Decoded) -> Vec<u8> {
        let mut out = Vec::new();
        d.file.read_to_end(&mut out).unwrap();
        assert_eq!(out.len() as u64, d.len);
        out
    }

    #[test]
    fn descriptors_are_read_as_torch_reads_them() {
        let d = |s: &[&str]| parse(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(d(&[]), Ok(vec![]));
        assert_eq!(d(&["stream.zstd/1"]), Ok(vec![Transform::Zstd]));
        assert_eq!(d(&["stream.zstd/1.2"]), Ok(vec![Transform::Zstd]));
        assert_eq!(
            d(&["stream.zstd/1", "stream.zstd/1"]),
            Ok(vec![Transform::Zstd, Transform::Zstd])
        );
        assert_eq!(
            d(&["stream.zstd/2"]),
            Err(UnknownTransform("stream.zstd/2".into()))
        );
        assert_eq!(
            d(&["stream.lz4/1"]),
            Err(UnknownTransform("stream.lz4/1".into()))
        );
        assert_eq!(
            d(&["stream.zstd"]),
            Err(UnknownTransform("stream.zstd".into()))
        );
    }

    #[test]
    fn a_frame_decodes_and_what_follows_it_is_trailing() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut stored = zstd::encode_all(&data[..], 3).unwrap();
        let d = decode(&stored, &[Transform::Zstd], 1 << 20).unwrap();
        assert_eq!(d.trailing, 0);
        assert_eq!(bytes(d), data);
        stored.extend_from_slice(&[9; 100]);
        let d = decode(&stored, &[Transform::Zstd], 1 << 20).unwrap();
        assert_eq!(d.trailing, 100);
        assert_eq!(bytes(d), data);
        // Two transforms: decoded twice.
        let twice = zstd::encode_all(&zstd::encode_all(&data[..], 3).unwrap()[..], 1).unwrap();
        let d = decode(&twice, &[Transform::Zstd, Transform::Zstd], 1 << 20).unwrap();
        assert_eq!(bytes(d), data);
    }

    #[test]
    fn cut_damaged_and_oversized_frames_are_refused() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let stored = zstd::encode_all(&data[..], 3).unwrap();
        let cut = &stored[..stored.len() / 2];
        assert!(matches!(
            decode(cut, &[Transform::Zstd], 1 << 20),
            Err(DecodeError::Truncated { stored }) if stored == cut.len() as u64
        ));
        assert!(matches!(
            decode(&[], &[Transform::Zstd], 1 << 20),
            Err(DecodeError::Truncated { stored: 0 })
        ));
        assert!(matches!(
            decode(b"not zstd at all", &[Transform::Zstd], 1 << 20),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            decode(&stored, &[Transform::Zstd], 1000),
            Err(DecodeError::TooLarge { limit: 1000 })
        ));
        // A 1 GiB frame of zeros, a few kB stored: stopped at the limit.
        let mut bomb = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            bomb.write_all(&zeros).unwrap();
        }
        let bomb = bomb.finish().unwrap();
        assert!(bomb.len() < 1 << 16, "{}", bomb.len());
        assert!(matches!(
            decode(&bomb, &[Transform::Zstd], 4 << 20),
            Err(DecodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_window_beyond_the_readers_limit_is_refused() {
        // Frame header: magic, descriptor 0 (no checksum, no size, not single segment),
        // window descriptor 0xf8: exponent 31, a 2 GiB window.
        let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8];
        frame.extend_from_slice(&[0x01, 0x00, 0x00]);
        assert!(matches!(
            decode(&frame, &[Transform::Zstd], 1 << 20),
            Err(DecodeError::Invalid { .. })
        ));
    }
}
