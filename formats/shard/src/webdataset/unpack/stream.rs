//! A compressed shard decompressed as it is read, into the tar walk. Every finding
//! about the compressed stream has its compressed byte offset: the gzip member is
//! parsed here (header, raw deflate, CRC-32 and size trailer), and zstd frames are
//! decoded in pieces small enough to place an error.

use flate2::{Decompress, FlushDecompress};
use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};
use zstd::stream::raw::{DParameter, InBuffer, Operation, OutBuffer};

use super::codec::Codec;
use super::gzip::gz_header;
use crate::webdataset::inspect::TarInspector;

/// Decompressed bytes handed to the tar walk at a time.
const OUT: usize = 64 << 10;
/// Compressed bytes given to a decoder at a time: always the same pieces of the file
/// (aligned to it, whatever sizes the file is read in), so that what a decoder reports
/// never depends on the reads; small, so that a zstd error (zstd does not say where in
/// its input it failed) is placed within 16 KiB.
const PIECE: usize = 16 << 10;
/// Largest zstd window accepted, as a power of two (zstd's default decoder limit; the
/// ultra levels 20-22 use it).
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// Where the decoder is in the compressed stream.
enum Decoder {
    /// Collecting the gzip header.
    GzHeader(Vec<u8>),
    /// Inside the deflate data.
    Deflate(Box<Decompress>, crc32fast::Hasher),
    /// Collecting the 8-byte trailer that starts at `at`.
    GzTrailer {
        at: u64,
        crc: u32,
        size: u64,
        buf: Vec<u8>,
    },
    /// Inside the zstd frame.
    Zstd(Box<zstd::stream::raw::Decoder<'static>>),
    /// The stream ended: what follows is trailing data.
    Ended { at: u64, len: u64, nonzero: bool },
    /// A finding was made; the rest is not decoded.
    Failed,
}

/// A compressed shard being decompressed into a tar walk.
pub(super) struct Stream {
    path: String,
    codec: Codec,
    decoder: Decoder,
    tar: Box<TarInspector>,
    out: Vec<u8>,
    /// Compressed bytes not yet decoded, less than a [`PIECE`].
    pending: Vec<u8>,
    /// Compressed bytes decoded.
    pos: u64,
    /// Decompressed bytes handed to the tar walk.
    tar_bytes: u64,
    findings: Vec<Finding>,
}

/// What one step of a decoder did.
enum Step {
    /// Consumed this many input bytes; same state.
    Used(usize),
    /// Consumed this many, then the stream's data ended.
    Ended(usize),
    /// Failed after this many bytes, in the next this many bytes (0: exactly there),
    /// with this message.
    Failed(usize, usize, String),
    /// Failed at this file offset, with this message.
    FailedAt(u64, String),
}

impl Stream {
    pub(super) fn new(
        path: &str,
        codec: Codec,
        tar: Box<TarInspector>,
        mut findings: Vec<Finding>,
    ) -> Self {
        let decoder = match codec {
            Codec::Gz => Decoder::GzHeader(Vec::new()),
            Codec::Zstd => match zstd::stream::raw::Decoder::new().and_then(|mut d| {
                d.set_parameter(DParameter::WindowLogMax(ZSTD_WINDOW_LOG_MAX))?;
                Ok(d)
            }) {
                Ok(decoder) => Decoder::Zstd(Box::new(decoder)),
                Err(e) => {
                    let why = format!("no zstd decoder could be made: {e}");
                    findings.push(Finding::error(FindingKind::UnreadableFile, path, why));
                    Decoder::Failed
                }
            },
        };
        Self {
            path: path.to_string(),
            codec,
            decoder,
            tar,
            out: vec![0; OUT],
            pending: Vec::with_capacity(PIECE),
            pos: 0,
            tar_bytes: 0,
            findings,
        }
    }

    fn error(&mut self, kind: FindingKind, at: u64, message: String) {
        self.findings
            .push(Finding::error(kind, &self.path, message).at(at));
    }

    pub(super) fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.pending.is_empty() && data.len() >= PIECE {
                self.decode(&data[..PIECE]);
                data = &data[PIECE..];
                continue;
            }
            let take = (PIECE - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() == PIECE {
                let piece = std::mem::take(&mut self.pending);
                self.decode(&piece);
                self.pending = piece;
                self.pending.clear();
            }
        }
    }

    /// Decodes one piece of the compressed file.
    fn decode(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let step = match &mut self.decoder {
                Decoder::Failed => Step::Used(data.len()),
                Decoder::Ended { len, nonzero, .. } => {
                    *len += data.len() as u64;
                    *nonzero |= data.iter().any(|&b| b != 0);
                    Step::Used(data.len())
                }
                Decoder::GzHeader(buf) => match gz_header(buf, data) {
                    Ok((used, true)) => {
                        let inflate = Box::new(Decompress::new(false));
                        self.decoder = Decoder::Deflate(inflate, crc32fast::Hasher::new());
                        Step::Used(used)
                    }
                    Ok((used, false)) => Step::Used(used),
                    Err((at, why)) => Step::FailedAt(at, why),
                },
                Decoder::Deflate(inflate, crc) => {
                    let step = drain(
                        &mut self.out,
                        data,
                        &mut self.tar,
                        &mut self.tar_bytes,
                        |input, out| {
                            let (in0, out0) = (inflate.total_in(), inflate.total_out());
                            let status = inflate.decompress(input, out, FlushDecompress::None);
                            let used = (inflate.total_in() - in0) as usize;
                            let made = (inflate.total_out() - out0) as usize;
                            crc.update(&out[..made]);
                            match status {
                                Ok(flate2::Status::StreamEnd) => (used, made, Ok(true)),
                                Ok(_) => (used, made, Ok(false)),
                                Err(e) => (
                                    used,
                                    made,
                                    Err((format!("the deflate data is invalid ({e})"), 0)),
                                ),
                            }
                        },
                    );
                    match step {
                        Step::Ended(used) => {
                            let crc = std::mem::take(crc).finalize();
                            self.decoder = Decoder::GzTrailer {
                                at: self.pos + used as u64,
                                crc,
                                size: self.tar_bytes,
                                buf: Vec::new(),
                            };
                            Step::Used(used)
                        }
                        other => other,
                    }
                }
                Decoder::GzTrailer { at, crc, size, buf } => {
                    let take = (8 - buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..take]);
                    if buf.len() == 8 {
                        let (at, crc, size) = (*at, *crc, *size);
                        let stored_crc = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes"));
                        let stored_size = u32::from_le_bytes(buf[4..].try_into().expect("4 bytes"));
                        self.check_trailer(at, (crc, stored_crc), (size, stored_size));
                        Step::Ended(take)
                    } else {
                        Step::Used(take)
                    }
                }
                Decoder::Zstd(zstd) => drain(
                    &mut self.out,
                    data,
                    &mut self.tar,
                    &mut self.tar_bytes,
                    |input, out| {
                        let len = input.len();
                        let mut input = InBuffer::around(input);
                        let mut output = OutBuffer::around(out);
                        let status = zstd.run(&mut input, &mut output);
                        let (used, made) = (input.pos(), output.pos());
                        match status {
                            Ok(remaining) => (used, made, Ok(remaining == 0)),
                            // zstd does not say where in the piece it failed.
                            Err(e) => (
                                used,
                                made,
                                Err((format!("the zstd data is invalid ({e})"), len - used)),
                            ),
                        }
                    },
                ),
            };
            let used = match step {
                Step::Used(used) => used,
                Step::Ended(used) => {
                    let at = self.pos + used as u64;
                    self.decoder = Decoder::Ended {
                        at,
                        len: 0,
                        nonzero: false,
                    };
                    used
                }
                Step::Failed(used, span, why) => {
                    self.fail(self.pos + used as u64, span as u64, &why);
                    data.len()
                }
                Step::FailedAt(at, why) => {
                    self.fail(at, 0, &why);
                    data.len()
                }
            };
            self.pos += used as u64;
            data = &data[used..];
        }
    }

    /// Reports the stream damaged at compressed byte `at` (or in the `span` bytes from
    /// there the decoder was given when it failed); the rest is not decoded.
    fn fail(&mut self, at: u64, span: u64, why: &str) {
        let (name, tar_bytes) = (self.codec.name(), self.tar_bytes);
        let (place, range) = match span {
            0 => (format!("at compressed byte {at}"), (at, None)),
            _ => (
                format!("in compressed bytes {at}..{}", at + span),
                (at, Some(at + span)),
            ),
        };
        let message = format!(
            "{why}, detected {place} after {tar_bytes} bytes of tar: the {name} stream is damaged and readers stop here with an error"
        );
        let finding = Finding::error(FindingKind::DecompressionFailed, &self.path, message);
        self.findings.push(match range {
            (at, None) => finding.at(at),
            (at, Some(end)) => finding.range(at, end),
        });
        self.decoder = Decoder::Failed;
    }

    fn check_trailer(
        &mut self,
        at: u64,
        (crc, stored_crc): (u32, u32),
        (size, stored_size): (u64, u32),
    ) {
        if crc != stored_crc {
            self.findings.push(
                Finding::error(
                    FindingKind::DecompressionFailed,
                    &self.path,
                    "the CRC-32 of the decompressed tar differs from the gzip trailer: compressed bytes were altered, and Python's tarfile does not check it, so readers get the altered bytes silently",
                )
                .at(at)
                .values(format!("{stored_crc:08x}"), format!("{crc:08x}")),
            );
        }
        if size as u32 != stored_size {
            self.findings.push(
                Finding::error(
                    FindingKind::DecompressionFailed,
                    &self.path,
                    "the gzip trailer records another decompressed size (modulo 2^32) than the stream has: bytes were lost or altered",
                )
                .at(at + 4)
                .values(stored_size, size as u32),
            );
        }
    }

    pub(super) fn finish(mut self) -> Inspection {
        let rest = std::mem::take(&mut self.pending);
        self.decode(&rest);
        let (pos, name, tar_bytes) = (self.pos, self.codec.name(), self.tar_bytes);
        let cut = |what: &str| {
            format!(
                "the {name} stream ends at byte {pos}, {what}: the shard is truncated ({tar_bytes} bytes of tar decompressed); readers see only the samples before the cut (Python's tarfile raises no error when it falls between members)"
            )
        };
        match std::mem::replace(&mut self.decoder, Decoder::Failed) {
            Decoder::GzHeader(buf) => {
                let why = cut(&format!("inside its header ({} bytes)", buf.len()));
                self.error(FindingKind::Truncated, pos, why);
            }
            Decoder::Deflate(..) => {
                self.error(FindingKind::Truncated, pos, cut("inside its deflate data"))
            }
            Decoder::GzTrailer { buf, .. } => {
                let why = cut(&format!(
                    "inside its 8-byte trailer (CRC-32 and size; {} present)",
                    buf.len()
                ));
                self.error(FindingKind::Truncated, pos, why);
            }
            Decoder::Zstd(_) => self.error(
                FindingKind::Truncated,
                pos,
                cut("before the end of its frame"),
            ),
            Decoder::Ended { at, len, nonzero } if len > 0 => {
                let what = match self.codec {
                    Codec::Gz => {
                        "gzip member: Python's tarfile (webdataset) reads only the first member and ignores them"
                    }
                    Codec::Zstd => "zstd frame: readers that decode one frame ignore them",
                };
                let message = format!("{len} byte(s) after the end of the {what}");
                let finding = if nonzero {
                    Finding::error(FindingKind::TrailingData, &self.path, message)
                } else {
                    Finding::warning(
                        FindingKind::TrailingData,
                        &self.path,
                        format!("{message} (they are zero bytes)"),
                    )
                };
                self.findings.push(finding.at(at).range(at, at + len));
            }
            Decoder::Ended { .. } | Decoder::Failed => {}
        }
        let mut inspection = self.tar.finish();
        for finding in &mut inspection.findings {
            finding.message = format!("in the decompressed tar: {}", finding.message);
        }
        self.findings.append(&mut inspection.findings);
        inspection.findings = self.findings;
        inspection
    }
}

/// Runs `decode(input, out) -> (used, made, ended or (error, bytes it may lie in))` over
/// `data` until the input
/// is consumed and no output is pending, handing what it makes to the tar walk.
fn drain(
    out: &mut [u8],
    data: &[u8],
    tar: &mut TarInspector,
    tar_bytes: &mut u64,
    mut decode: impl FnMut(&[u8], &mut [u8]) -> (usize, usize, Result<bool, (String, usize)>),
) -> Step {
    let mut used = 0;
    loop {
        let (n, made, status) = decode(&data[used..], out);
        used += n;
        tar.update(&out[..made]);
        *tar_bytes += made as u64;
        match status {
            Err((why, span)) => return Step::Failed(used, span, why),
            Ok(true) => return Step::Ended(used),
            Ok(false) if made == out.len() => {}
            Ok(false) if used == data.len() => return Step::Used(used),
            Ok(false) if n == 0 && made == 0 => {
                return Step::Failed(used, 0, "the decoder makes no progress".into());
            }
            Ok(false) => {}
        }
    }
}
