//! Writing token files, byte-exact with their consumers (`../README.md`, "Token
//! files"): Megatron `PREFIX.bin` + `PREFIX.idx`, nanoGPT raw tokens, llm.c's 1024-byte
//! header then tokens. Every file is hashed while written and becomes visible only when
//! committed. Megatron's index is assembled at the end of each shard from a spill file of
//! 4 bytes per document, so memory stays bounded whatever the shard holds.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, Digester, ExpectedSize, FileEntry, HashingWriter};

use crate::{Error, Result};
use shardsmith_store::{OutputSink, ShardFile};

/// Megatron index magic.
pub const IDX_MAGIC: &[u8; 9] = b"MMIDIDX\x00\x00";
/// Megatron index header size.
pub const IDX_HEADER: u64 = 34;
/// llm.c header size.
pub const LLMC_HEADER: u64 = 1024;
/// llm.c magic and version of uint16 token files (GPT-2).
pub const LLMC_U16: (i32, i32) = (20240520, 1);
/// llm.c magic and version of uint32 token files (Llama 3).
pub const LLMC_U32: (i32, i32) = (20240801, 7);

/// The token file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenFormat {
    /// Megatron-LM / NeMo indexed dataset, document level.
    Megatron,
    /// nanoGPT: raw little-endian tokens.
    Nanogpt,
    /// llm.c: 1024-byte header, then tokens.
    Llmc,
}

/// Token storage type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenDtype {
    /// Little-endian u16.
    Uint16,
    /// Little-endian u32.
    Uint32,
    /// Little-endian i32 (Megatron has no uint32 code).
    Int32,
}

impl TokenDtype {
    /// Bytes per token.
    pub fn size(self) -> u64 {
        match self {
            TokenDtype::Uint16 => 2,
            TokenDtype::Uint32 | TokenDtype::Int32 => 4,
        }
    }

    /// Appends `ids` to `out` as little-endian values of this type; an id of `vocab` or
    /// more is not written, and the first one is returned.
    pub fn encode(
        self,
        ids: &[u32],
        vocab: u32,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), u32> {
        if let Some(&bad) = ids.iter().find(|&&id| id >= vocab) {
            return Err(bad);
        }
        let start = out.len();
        out.resize(start + ids.len() * self.size() as usize, 0);
        match self {
            TokenDtype::Uint16 => {
                for (dst, &id) in out[start..].chunks_exact_mut(2).zip(ids) {
                    dst.copy_from_slice(&(id as u16).to_le_bytes());
                }
            }
            TokenDtype::Uint32 | TokenDtype::Int32 => {
                for (dst, &id) in out[start..].chunks_exact_mut(4).zip(ids) {
                    dst.copy_from_slice(&id.to_le_bytes());
                }
            }
        }
        Ok(())
    }

    /// Megatron's dtype code.
    pub fn megatron_code(self) -> u8 {
        match self {
            TokenDtype::Uint16 => 8,
            TokenDtype::Int32 | TokenDtype::Uint32 => 4,
        }
    }

    /// Name as recorded in the manifest.
    pub fn name(self) -> &'static str {
        match self {
            TokenDtype::Uint16 => "uint16",
            TokenDtype::Uint32 => "uint32",
            TokenDtype::Int32 => "int32",
        }
    }

    /// Parses a manifest name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "uint16" => TokenDtype::Uint16,
            "uint32" => TokenDtype::Uint32,
            "int32" => TokenDtype::Int32,
            _ => return None,
        })
    }
}

impl TokenFormat {
    /// Name as recorded in manifests.
    pub fn name(self) -> &'static str {
        match self {
            TokenFormat::Megatron => "megatron",
            TokenFormat::Nanogpt => "nanogpt",
            TokenFormat::Llmc => "llmc",
        }
    }

    /// Parses a manifest name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "megatron" => TokenFormat::Megatron,
            "nanogpt" => TokenFormat::Nanogpt,
            "llmc" => TokenFormat::Llmc,
            _ => return None,
        })
    }

    /// The token type for a vocabulary of `vocab` ids, by each consumer's rule:
    /// Megatron `uint16 if vocab < 65500 else int32`; nanoGPT and llm.c uint16 while
    /// every id fits, else uint32.
    pub fn dtype(self, vocab: u32) -> Result<TokenDtype> {
        match self {
            TokenFormat::Megatron if vocab < 65500 => Ok(TokenDtype::Uint16),
            TokenFormat::Megatron if vocab <= i32::MAX as u32 => Ok(TokenDtype::Int32),
            TokenFormat::Megatron => Err(Error::Unrepresentable(format!(
                "a vocabulary of {vocab} ids does not fit Megatron's int32 tokens"
            ))),
            _ if vocab <= 1 << 16 => Ok(TokenDtype::Uint16),
            _ => Ok(TokenDtype::Uint32),
        }
    }

    /// The token file of shard `index`: `PREFIX_000000.bin`.
    pub fn bin_name(prefix: &str, index: usize) -> String {
        format!("{prefix}_{index:06}.bin")
    }

    /// Documents are cut at shard boundaries (nanoGPT and llm.c shards hold exactly the
    /// shard size in tokens; Megatron shards end between documents).
    pub fn splits_documents(self) -> bool {
        self != TokenFormat::Megatron
    }
}

/// One shard being written.
pub struct ShardWriter {
    format: TokenFormat,
    dtype: TokenDtype,
    vocab: u32,
    name: String,
    out: HashingWriter<BufWriter<Box<dyn ShardFile>>>,
    tokens: u64,
    documents: u64,
    /// Megatron: tokens of every document of the shard, 4 bytes each.
    spill: Option<BufWriter<File>>,
    /// llm.c: the token count written in the header.
    header_count: u64,
}

/// What a finished shard gives: its manifest entries and its uncommitted files.
pub type Finished = (Vec<FileEntry>, Vec<Box<dyn ShardFile>>);

fn llmc_header(dtype: TokenDtype, count: u64) -> Vec<u8> {
    let (magic, version) = if dtype == TokenDtype::Uint16 {
        LLMC_U16
    } else {
        LLMC_U32
    };
    let mut header = vec![0u8; LLMC_HEADER as usize];
    header[0..4].copy_from_slice(&magic.to_le_bytes());
    header[4..8].copy_from_slice(&version.to_le_bytes());
    header[8..12].copy_from_slice(&(count as i32).to_le_bytes());
    header
}

impl ShardWriter {
    /// Starts shard file `name`. For llm.c, `expected` is the token count the header
    /// says (the shard size: every shard but the last is full); a shard that ends
    /// shorter gets its header rewritten. `bound` bounds the file's bytes when no shard
    /// size does (`expected` 0).
    pub fn create(
        sink: &dyn OutputSink,
        format: TokenFormat,
        dtype: TokenDtype,
        vocab: u32,
        name: String,
        expected: u64,
        bound: Option<u64>,
    ) -> Result<Self> {
        // llm.c's header may be rewritten at the end: a sink that cannot change what it
        // has written (an object store) spools that one file locally first.
        let file = if format == TokenFormat::Llmc {
            sink.create_spooled(&name)?
        } else {
            sink.create(&name)?
        };
        // The shard size bounds the file, else the input's size may (llm.c's header
        // on top); without either its chunks are hashed in case it reaches the
        // chunk-list threshold.
        let bound = match expected {
            0 => bound,
            n => Some(n.saturating_mul(dtype.size())),
        };
        let size = bound.map_or(ExpectedSize::Unknown, |b| {
            ExpectedSize::AtMost(b.saturating_add(LLMC_HEADER))
        });
        let mut out = HashingWriter::expecting(
            BufWriter::with_capacity(1 << 20, file),
            DEFAULT_CHUNK_SIZE,
            size,
        );
        let mut header_count = 0;
        if format == TokenFormat::Llmc {
            header_count = expected;
            out.write_all(&llmc_header(dtype, expected))
                .map_err(|e| Error::io("writing", &name, e))?;
        }
        let spill = match format {
            TokenFormat::Megatron => Some(BufWriter::new(sink.scratch()?)),
            _ => None,
        };
        Ok(Self {
            format,
            dtype,
            vocab,
            name,
            out,
            tokens: 0,
            documents: 0,
            spill,
            header_count,
        })
    }

    /// Tokens written so far.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// File name of the token file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends tokens already encoded as this shard's dtype ([`TokenDtype::encode`],
    /// which refuses ids outside the vocabulary).
    pub fn write(&mut self, encoded: &[u8]) -> Result<()> {
        self.out
            .write_all(encoded)
            .map_err(|e| Error::io("writing", &self.name, e))?;
        self.tokens += encoded.len() as u64 / self.dtype.size();
        Ok(())
    }

    /// The error for an id outside the vocabulary on its way into this shard: it would
    /// be silently wrong in training (or wrap around in a narrower type).
    pub fn out_of_vocabulary(&self, id: u32) -> Error {
        Error::Unrepresentable(format!(
            "the tokenizer produced id {id}, outside its vocabulary of {} ids; refusing to write `{}`",
            self.vocab, self.name
        ))
    }

    /// Counts a document in this shard; for Megatron, `tokens` is its length (a
    /// document of 0 tokens is a document without sequences, as Megatron writes it).
    pub fn document(&mut self, tokens: u64) -> Result<()> {
        self.documents += 1;
        if let Some(spill) = &mut self.spill {
            let len = i32::try_from(tokens).map_err(|_| {
                Error::Unrepresentable(format!(
                    "a document of {tokens} tokens does not fit Megatron's int32 lengths"
                ))
            })?;
            spill
                .write_all(&(len as u32).to_le_bytes())
                .map_err(|e| Error::io("writing the index spill of", &self.name, e))?;
        }
        Ok(())
    }

    /// Ends the shard: writes the index (Megatron) or fixes the header (llm.c).
    pub fn finish(self, sink: &dyn OutputSink) -> Result<Finished> {
        let name = self.name.clone();
        let err = |e: io::Error| Error::io("writing", &name, e);
        let (buffered, mut digest) = self.out.finish();
        let mut file = buffered.into_inner().map_err(|e| err(e.into_error()))?;
        if self.format == TokenFormat::Llmc && self.header_count != self.tokens {
            let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
            file.rewrite(0, &llmc_header(self.dtype, self.tokens), &mut |b| {
                digester.update(b)
            })
            .map_err(err)?;
            digest = digester.finish();
        }
        let mut entry = FileEntry::new(&name, &digest);
        entry.format = Some(self.format.name().into());
        entry.documents = Some(self.documents);
        entry.tokens = Some(self.tokens);
        let mut entries = vec![entry];
        let mut files = vec![file];
        if let Some(spill) = self.spill {
            let idx_name = format!("{}.idx", name.trim_end_matches(".bin"));
            let spill = spill.into_inner().map_err(|e| err(e.into_error()))?;
            let (idx_file, idx_digest) =
                write_index(sink, &idx_name, spill, self.dtype, self.documents)?;
            let mut idx = FileEntry::new(&idx_name, &idx_digest);
            idx.format = Some(self.format.name().into());
            entries.push(idx);
            files.push(idx_file);
        }
        Ok((entries, files))
    }
}

/// Writes a document-level Megatron index from the spill of document lengths: header,
/// `int32` lengths of the non-empty documents, `int64` byte pointers, `int64` document
/// boundaries. Three sequential passes over the spill.
fn write_index(
    sink: &dyn OutputSink,
    name: &str,
    mut spill: File,
    dtype: TokenDtype,
    documents: u64,
) -> Result<(Box<dyn ShardFile>, shardsmith_manifest::FileDigest)> {
    let err = |e: io::Error| Error::io("writing", name, e);
    let pass = |spill: &mut File, f: &mut dyn FnMut(u32) -> io::Result<()>| -> io::Result<()> {
        spill.seek(SeekFrom::Start(0))?;
        let mut reader = BufReader::with_capacity(1 << 16, &*spill);
        let mut word = [0u8; 4];
        for _ in 0..documents {
            reader.read_exact(&mut word)?;
            f(u32::from_le_bytes(word))?;
        }
        Ok(())
    };
    let mut sequences = 0u64;
    pass(&mut spill, &mut |len| {
        sequences += u64::from(len > 0);
        Ok(())
    })
    .map_err(err)?;
    let file = sink.create(name)?;
    let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file), DEFAULT_CHUNK_SIZE);
    out.write_all(IDX_MAGIC).map_err(err)?;
    out.write_all(&1u64.to_le_bytes()).map_err(err)?;
    out.write_all(&[dtype.megatron_code()]).map_err(err)?;
    out.write_all(&sequences.to_le_bytes()).map_err(err)?;
    out.write_all(&(documents + 1).to_le_bytes()).map_err(err)?;
    pass(&mut spill, &mut |len| {
        if len > 0 {
            out.write_all(&len.to_le_bytes())?;
        }
        Ok(())
    })
    .map_err(err)?;
    let mut pointer = 0i64;
    pass(&mut spill, &mut |len| {
        if len > 0 {
            out.write_all(&pointer.to_le_bytes())?;
            pointer += i64::from(len) * dtype.size() as i64;
        }
        Ok(())
    })
    .map_err(err)?;
    let mut boundary = 0i64;
    out.write_all(&boundary.to_le_bytes()).map_err(err)?;
    pass(&mut spill, &mut |len| {
        boundary += i64::from(len > 0);
        out.write_all(&boundary.to_le_bytes())
    })
    .map_err(err)?;
    let (buffered, digest) = out.finish();
    let file = buffered.into_inner().map_err(|e| err(e.into_error()))?;
    Ok((file, digest))
}
