//! Arrow IPC record batches checked before arrow-ipc decodes them. arrow-ipc (with its
//! `zstd` and `lz4` features, which LitData's IPC-compressed footers need) allocates the
//! uncompressed length a compressed buffer states before it decompresses, so a few
//! damaged bytes could ask for exabytes:
//! - [`compressed_total`] adds up what a batch's compressed buffers state, for a reader
//!   that holds the batch's body (LitData footers), to hold against the decode limit;
//! - [`Uncompressed`] passes an IPC *stream* through and fails the read that would hand
//!   over a compressed batch's metadata, for readers of streams no writer compresses
//!   (Hugging Face `save_to_disk` files).

use std::io::{self, Read};

use arrow_ipc::Message;

/// Metadata longer than this is refused by [`Uncompressed`] (Arrow's own messages are a
/// few KB; a schema of thousands of columns stays well under it).
const MAX_METADATA: u64 = 64 << 20;

/// The message of an IPC *file*'s block (its metadata and body), parsed as arrow-ipc's
/// `FileReader` parses it: from after the continuation marker and length (or the
/// pre-1.0 length alone) to the block's end, whatever length the prefix states.
pub(crate) fn block_message(block: &[u8]) -> Option<Message<'_>> {
    let start = if block.get(..4)? == [0xff; 4] { 8 } else { 4 };
    arrow_ipc::root_as_message(block.get(start..)?).ok()
}

/// The flatbuffer of a message from its encapsulated metadata in an IPC *stream* (the
/// continuation marker and length, or the pre-1.0 length alone, then the flatbuffer of
/// that length, as arrow-ipc's `StreamReader` reads it).
pub(crate) fn message(meta: &[u8]) -> Option<Message<'_>> {
    let (len_at, start): (usize, usize) = if meta.get(..4)? == [0xff; 4] {
        (4, 8)
    } else {
        (0, 4)
    };
    let len = i32::from_le_bytes(meta.get(len_at..len_at + 4)?.try_into().ok()?);
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    arrow_ipc::root_as_message(meta.get(start..end)?).ok()
}

/// The uncompressed bytes that the compressed buffers of `message` (a record batch or a
/// dictionary batch; anything else is 0) state in their 8-byte prefixes within `body`.
/// A buffer outside `body` is left to arrow-ipc, which refuses it.
pub(crate) fn compressed_total(message: &Message<'_>, body: &[u8]) -> u64 {
    let batch = message
        .header_as_record_batch()
        .or_else(|| message.header_as_dictionary_batch().and_then(|d| d.data()));
    let Some(batch) = batch else { return 0 };
    if batch.compression().is_none() {
        return 0;
    }
    let mut total = 0u64;
    for buffer in batch.buffers().into_iter().flatten() {
        let Ok(at) = usize::try_from(buffer.offset()) else {
            continue;
        };
        let stated = at
            .checked_add(8)
            .and_then(|end| body.get(at..end))
            .filter(|_| buffer.length() >= 8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")));
        if let Some(n) = stated.and_then(|n| u64::try_from(n).ok()) {
            total = total.saturating_add(n);
        }
    }
    total
}

/// Where [`Uncompressed`] is in the stream.
enum Frame {
    /// Reading a message's length prefix (4 or 8 bytes).
    Prefix,
    /// Reading `need` bytes of metadata.
    Meta { need: u64 },
    /// Passing `left` bytes of body.
    Body { left: u64 },
    /// The end-of-stream marker was read, or the framing was lost (left to arrow-ipc).
    Done,
}

/// An Arrow IPC stream passed through unchanged, except that a read which would complete
/// the metadata of a compressed record batch fails instead.
pub(crate) struct Uncompressed<R> {
    inner: R,
    frame: Frame,
    held: Vec<u8>,
}

impl<R: Read> Uncompressed<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            frame: Frame::Prefix,
            held: Vec::new(),
        }
    }

    /// Follows the framing over `data`; an error for a compressed batch.
    fn follow(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match self.frame {
                Frame::Done => return Ok(()),
                Frame::Body { left } => {
                    let n = left.min(data.len() as u64);
                    data = &data[n as usize..];
                    self.frame = match left - n {
                        0 => Frame::Prefix,
                        left => Frame::Body { left },
                    };
                }
                Frame::Prefix => {
                    let want = if self.held.len() >= 4 && self.held[..4] == [0xff; 4] {
                        8
                    } else {
                        4
                    };
                    let take = (want - self.held.len()).min(data.len());
                    self.held.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if self.held.len() == 4 && self.held[..4] == [0xff; 4] {
                        continue;
                    }
                    if self.held.len() < want {
                        continue;
                    }
                    let len =
                        i32::from_le_bytes(self.held[want - 4..want].try_into().expect("4 bytes"));
                    self.frame = match u64::try_from(len) {
                        Ok(0) => Frame::Done,
                        Ok(n) if n <= MAX_METADATA => Frame::Meta { need: n },
                        _ => Frame::Done,
                    };
                }
                Frame::Meta { need } => {
                    let have = self.held.len() as u64;
                    let prefix = if self.held[..4] == [0xff; 4] { 8 } else { 4 };
                    let take = (need + prefix - have).min(data.len() as u64) as usize;
                    self.held.extend_from_slice(&data[..take]);
                    data = &data[take..];
                    if (self.held.len() as u64) < need + prefix {
                        continue;
                    }
                    let Some(message) = message(&self.held) else {
                        self.frame = Frame::Done;
                        continue;
                    };
                    if message
                        .header_as_record_batch()
                        .is_some_and(|b| b.compression().is_some())
                        || message
                            .header_as_dictionary_batch()
                            .and_then(|d| d.data())
                            .is_some_and(|b| b.compression().is_some())
                    {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "a record batch is compressed, which no Hugging Face datasets writer does",
                        ));
                    }
                    let body = u64::try_from(message.bodyLength()).unwrap_or(0);
                    self.held.clear();
                    self.frame = if body == 0 {
                        Frame::Prefix
                    } else {
                        Frame::Body { left: body }
                    };
                }
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for Uncompressed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.follow(&buf[..n])?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, BinaryArray, RecordBatch};
    use arrow_ipc::CompressionType;
    use arrow_ipc::reader::StreamReader;
    use arrow_ipc::writer::{FileWriter, IpcWriteOptions, StreamWriter};

    use super::*;

    fn batch() -> RecordBatch {
        let values: Vec<&[u8]> = vec![&[7u8; 3000], b"", &[1, 2, 3]];
        let column: ArrayRef = Arc::new(BinaryArray::from(values));
        RecordBatch::try_from_iter([("jpg", column)]).unwrap()
    }

    fn options(zstd: bool) -> IpcWriteOptions {
        let codec = zstd.then_some(CompressionType::ZSTD);
        IpcWriteOptions::default()
            .try_with_compression(codec)
            .unwrap()
    }

    fn stream(zstd: bool) -> Vec<u8> {
        let batch = batch();
        let mut out = Vec::new();
        let mut writer =
            StreamWriter::try_new_with_options(&mut out, &batch.schema(), options(zstd)).unwrap();
        writer.write(&batch).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        out
    }

    /// Reads `bytes` through `Uncompressed` in reads of `step` bytes.
    struct Steps<'a>(&'a [u8], usize);

    impl Read for Steps<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_plain_stream_passes_whole_in_any_read_sizes() {
        let bytes = stream(false);
        for step in [1, 3, 7, 64, 1 << 20] {
            let mut passed = Vec::new();
            Uncompressed::new(Steps(&bytes, step))
                .read_to_end(&mut passed)
                .unwrap();
            assert_eq!(passed, bytes, "step {step}");
            let reader = StreamReader::try_new(Uncompressed::new(Steps(&bytes, step)), None);
            let rows: usize = reader.unwrap().map(|b| b.unwrap().num_rows()).sum();
            assert_eq!(rows, 6, "step {step}");
        }
    }

    #[test]
    fn a_compressed_batch_fails_the_read_in_any_read_sizes() {
        let bytes = stream(true);
        for step in [1, 5, 64, 1 << 20] {
            let mut passed = Vec::new();
            let err = Uncompressed::new(Steps(&bytes, step))
                .read_to_end(&mut passed)
                .unwrap_err();
            assert!(err.to_string().contains("compressed"), "{err}");
        }
    }

    #[test]
    fn stated_uncompressed_lengths_are_added_up_from_the_body() {
        let batch = batch();
        let mut file = Vec::new();
        let mut writer =
            FileWriter::try_new_with_options(&mut file, &batch.schema(), options(true)).unwrap();
        writer.write(&batch).unwrap();
        writer.finish().unwrap();
        drop(writer);
        let tail = file.last_chunk::<10>().unwrap();
        let footer_len = arrow_ipc::reader::read_footer_length(*tail).unwrap();
        let footer_at = file.len() - 10 - footer_len;
        let footer = arrow_ipc::root_as_footer(&file[footer_at..file.len() - 10]).unwrap();
        let block = footer.recordBatches().unwrap().get(0);
        let (at, meta) = (block.offset() as usize, block.metaDataLength() as usize);
        let body = &file[at + meta..at + meta + block.bodyLength() as usize];
        let message = block_message(&file[at..at + meta + body.len()]).unwrap();
        // The values (3003 bytes); the 16 bytes of offsets are kept as they are (their
        // prefix is -1: compressing did not make them smaller), no validity buffer.
        assert_eq!(compressed_total(&message, body), 3003);
        assert_eq!(compressed_total(&message, &body[..4]), 0);
    }
}
