//! Streaming check of a token file's ids (Megatron `.bin`, nanoGPT, llm.c).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{FileEntry, Finding, FindingKind, Inspection, Inspector};

use super::header::{Options, idx_header, idx_path, llmc_magic, read_id};
use crate::write::{IDX_HEADER, TokenDtype, TokenFormat};

/// Streaming check of a token file's ids.
pub(super) struct BinInspector {
    format: TokenFormat,
    path: String,
    dtype: TokenDtype,
    header_len: u64,
    head: Vec<u8>,
    entry: Option<FileEntry>,
    opts: Options,
    offset: u64,
    partial: Vec<u8>,
    tokens: u64,
    eods: u64,
    out_of_range: u64,
    first_out_of_range: Option<(u64, u32)>,
    /// Megatron: the `.idx` lengths, read as the tokens go by.
    lengths: Option<BufReader<File>>,
    remaining: u64,
    sequences: u64,
    misplaced: u64,
    first_misplaced: Option<u64>,
    llmc_count: Option<u64>,
    /// Megatron: (sequences, documents) of the `.idx` header.
    idx_counts: Option<(u64, u64)>,
    findings: Vec<Finding>,
}

impl BinInspector {
    pub(super) fn raw(
        format: TokenFormat,
        path: String,
        dtype: TokenDtype,
        header_len: u64,
        entry: Option<FileEntry>,
        opts: Options,
    ) -> Self {
        Self {
            format,
            path,
            dtype,
            header_len,
            head: Vec::new(),
            entry,
            opts,
            offset: 0,
            partial: Vec::new(),
            tokens: 0,
            eods: 0,
            out_of_range: 0,
            first_out_of_range: None,
            lengths: None,
            remaining: 0,
            sequences: 0,
            misplaced: 0,
            first_misplaced: None,
            llmc_count: None,
            idx_counts: None,
            findings: Vec::new(),
        }
    }

    pub(super) fn megatron(
        root: &Path,
        path: String,
        entry: Option<FileEntry>,
        opts: Options,
    ) -> Self {
        let header = idx_header(root, &path);
        let dtype = header
            .map(|h| h.0)
            .or(opts.dtype)
            .unwrap_or(TokenDtype::Uint16);
        let mut me = Self::raw(TokenFormat::Megatron, path, dtype, 0, entry, opts);
        me.idx_counts = header.map(|(_, s, d)| (s, d.saturating_sub(1)));
        if header.is_some()
            && let Ok(mut f) = File::open(root.join(idx_path(&me.path)))
        {
            let mut skip = [0u8; IDX_HEADER as usize];
            if f.read_exact(&mut skip).is_ok() {
                me.lengths = Some(BufReader::with_capacity(1 << 16, f));
                me.sequences = header.map_or(0, |h| h.1);
            }
        }
        me
    }

    fn next_length(&mut self) -> Option<u64> {
        if self.sequences == 0 {
            return None;
        }
        let reader = self.lengths.as_mut()?;
        let mut word = [0u8; 4];
        if reader.read_exact(&mut word).is_err() {
            self.lengths = None;
            return None;
        }
        self.sequences -= 1;
        Some(u64::from(u32::from_le_bytes(word)))
    }

    fn token(&mut self, id: u32, at: u64) {
        self.tokens += 1;
        if let Some(vocab) = self.opts.vocab
            && u64::from(id) >= vocab
        {
            self.out_of_range += 1;
            self.first_out_of_range.get_or_insert((at, id));
        }
        let is_eod = self.opts.eod == Some(id);
        self.eods += u64::from(is_eod);
        if self.lengths.is_some() {
            while self.remaining == 0 {
                match self.next_length() {
                    Some(n) => self.remaining = n,
                    None => return,
                }
            }
            self.remaining -= 1;
            if self.remaining == 0 && self.opts.eod.is_some() && !is_eod {
                self.misplaced += 1;
                self.first_misplaced.get_or_insert(at);
            }
        }
    }
}

impl BinInspector {
    /// Whole tokens: counts, vocabulary and end-of-document checks a block at a time
    /// (the per-token work is a comparison the compiler vectorizes; sequence ends are
    /// reached by jumping over each sequence's length).
    fn tokens_run(&mut self, block: &[u8]) {
        let size = self.dtype.size() as usize;
        let n = block.len() / size;
        let dtype = self.dtype;
        let id = |i: usize| read_id(&block[i * size..(i + 1) * size], dtype);
        let vocab = self.opts.vocab.map_or(u64::MAX, |v| v);
        let eod = self.opts.eod;
        let (mut bad, mut first_bad, mut eods) = (0u64, None, 0u64);
        match self.dtype {
            TokenDtype::Uint16 => {
                for (i, c) in block.chunks_exact(2).enumerate() {
                    let v = u32::from(u16::from_le_bytes([c[0], c[1]]));
                    bad += u64::from(u64::from(v) >= vocab);
                    eods += u64::from(Some(v) == eod);
                    if first_bad.is_none() && u64::from(v) >= vocab {
                        first_bad = Some((i, v));
                    }
                }
            }
            _ => {
                for (i, c) in block.chunks_exact(4).enumerate() {
                    let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    bad += u64::from(u64::from(v) >= vocab);
                    eods += u64::from(Some(v) == eod);
                    if first_bad.is_none() && u64::from(v) >= vocab {
                        first_bad = Some((i, v));
                    }
                }
            }
        }
        self.out_of_range += bad;
        if let Some((i, v)) = first_bad
            && self.first_out_of_range.is_none()
        {
            self.first_out_of_range = Some((self.offset + (i * size) as u64, v));
        }
        self.eods += eods;
        let mut pos = 0usize;
        while self.lengths.is_some() && pos < n {
            if self.remaining == 0 {
                match self.next_length() {
                    Some(len) => self.remaining = len,
                    None => break,
                }
                continue;
            }
            let jump = self.remaining.min((n - pos) as u64) as usize;
            pos += jump;
            self.remaining -= jump as u64;
            if self.remaining == 0 && eod.is_some() && Some(id(pos - 1)) != eod {
                self.misplaced += 1;
                self.first_misplaced
                    .get_or_insert(self.offset + ((pos - 1) * size) as u64);
            }
        }
        self.tokens += n as u64;
        self.offset += block.len() as u64;
    }
}

impl Inspector for BinInspector {
    fn update(&mut self, mut data: &[u8]) {
        if self.offset < self.header_len {
            let take = ((self.header_len - self.offset) as usize).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            self.offset += take as u64;
            data = &data[take..];
            if self.offset == self.header_len && self.format == TokenFormat::Llmc {
                match llmc_magic(&self.head) {
                    Some(dtype) => {
                        self.dtype = dtype;
                        let count = i32::from_le_bytes(self.head[8..12].try_into().expect("4 bytes"));
                        self.llmc_count = Some(count.max(0) as u64);
                        if count <= 0 {
                            self.findings.push(Finding::error(FindingKind::BadHeader, &self.path, format!("the header counts {count} tokens; llm.c needs at least one")).at(8));
                        }
                    }
                    None => self.findings.push(Finding::error(
                        FindingKind::BadHeader,
                        &self.path,
                        "not an llm.c token file: magic and version are neither 20240520/1 (uint16) nor 20240801/7 (uint32)",
                    ).at(0)),
                }
            }
        }
        let size = self.dtype.size() as usize;
        while !data.is_empty() {
            if !self.partial.is_empty() || data.len() < size {
                let take = (size - self.partial.len()).min(data.len());
                self.partial.extend_from_slice(&data[..take]);
                data = &data[take..];
                if self.partial.len() == size {
                    let bytes = std::mem::take(&mut self.partial);
                    let id = read_id(&bytes, self.dtype);
                    self.token(id, self.offset);
                    self.offset += size as u64;
                }
                continue;
            }
            let whole = data.len() / size * size;
            self.tokens_run(&data[..whole]);
            data = &data[whole..];
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        let path = self.path.clone();
        self.size_findings(&path);
        self.token_findings(&path);
        self.manifest_findings(&path);
        let mut facts = BTreeMap::new();
        facts.insert("tokens".into(), Value::from(self.tokens));
        Inspection {
            format: self.format.name().into(),
            facts,
            findings: self.findings,
            ..Inspection::default()
        }
    }
}

impl BinInspector {
    /// A token cut short, or (llm.c) a header cut short or a size the header does not
    /// count.
    fn size_findings(&mut self, path: &str) {
        if !self.partial.is_empty() {
            let at = self.offset;
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    path,
                    format!("the file ends inside a {}-byte token", self.dtype.size()),
                )
                .at(at),
            );
        }
        if self.format == TokenFormat::Llmc && self.offset < self.header_len {
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    path,
                    "shorter than llm.c's 1024-byte header",
                )
                .at(self.offset),
            );
        }
        if let Some(count) = self.llmc_count {
            let expected = self.header_len + count * self.dtype.size();
            let size = self.offset + self.partial.len() as u64;
            if size != expected {
                let kind = if size < expected {
                    FindingKind::Truncated
                } else {
                    FindingKind::TrailingData
                };
                self.findings.push(Finding::error(kind, path, "the file size is not 1024 + the header's token count × the token size (llm.c refuses it)").at(size.min(expected)).values(expected, size));
            }
        }
    }

    /// Token ids out of range, and sequences that do not end with the end-of-document
    /// token.
    fn token_findings(&mut self, path: &str) {
        if let Some((at, id)) = self.first_out_of_range {
            let vocab = self.opts.vocab.unwrap_or(0);
            self.findings.push(
                Finding::error(
                    FindingKind::TokenOutOfRange,
                    path,
                    format!(
                        "{} token id(s) at or above the vocabulary size; the first is shown",
                        self.out_of_range
                    ),
                )
                .at(at)
                .values(format!("< {vocab}"), id),
            );
        }
        if let Some(at) = self.first_misplaced {
            self.findings.push(Finding::error(FindingKind::EodMismatch, path, format!("{} sequence(s) do not end with the end-of-document token; the first is shown", self.misplaced)).at(at));
        }
    }

    /// The documents and tokens found against what the manifest records.
    fn manifest_findings(&mut self, path: &str) {
        let entry = self.entry.clone();
        if let (Some(entry), Some(_)) = (&entry, self.opts.eod)
            && !self.opts.allow_special
            && self.first_misplaced.is_none()
        {
            let expected = if self.format == TokenFormat::Megatron {
                self.idx_counts.map(|(sequences, _)| sequences)
            } else {
                entry.documents
            };
            if let Some(expected) = expected
                && expected != self.eods
            {
                self.findings.push(
                    Finding::error(
                        FindingKind::EodMismatch,
                        path,
                        "the number of end-of-document tokens differs from the documents written",
                    )
                    .values(expected, self.eods),
                );
            }
        }
        if let Some(entry) = &entry
            && let Some(tokens) = entry.tokens
            && tokens != self.tokens
            && self.partial.is_empty()
        {
            self.findings.push(
                Finding::error(
                    FindingKind::TokenCountMismatch,
                    path,
                    "holds a different number of tokens than the manifest records",
                )
                .values(tokens, self.tokens),
            );
        }
        let documents = match self.format {
            TokenFormat::Megatron => self.idx_counts.map(|(_, d)| d),
            _ => None,
        };
        if let (Some(entry), Some(found)) = (&entry, documents)
            && let Some(recorded) = entry.documents
            && recorded != found
        {
            self.findings.push(
                Finding::error(
                    FindingKind::TokenCountMismatch,
                    path,
                    "its index holds a different number of documents than the manifest records",
                )
                .values(recorded, found),
            );
        }
    }
}
