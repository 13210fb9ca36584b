//! `verify` for token files, streaming during the same read that hashes each file:
//!
//! - Megatron `.idx`: header (magic, version, dtype code), size equal to what its counts
//!   say, pointers that are the running sum of the lengths, document boundaries that
//!   start at 0, never decrease and end at the sequence count.
//! - Megatron `.bin`: its size equal to what the `.idx` says (dataset-level check); every
//!   id below the vocabulary size; every sequence ending with the end-of-document token
//!   when the run added one (the sequence lengths are streamed from the `.idx` as the
//!   `.bin` is read); the counts the manifest records.
//! - nanoGPT: whole tokens, ids below the vocabulary, one end-of-document token per
//!   document recorded.
//! - llm.c: a known magic and version, a positive count equal to the file size.
//!
//! The vocabulary size, end-of-document id and dtype come from the manifest's options.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde_json::Value;
use shardsmith_manifest::{
    FileContext, FileEntry, Finding, FindingKind, Inspection, Inspector, Manifest,
};

use super::write::{Dtype, IDX_HEADER, IDX_MAGIC, LLMC_HEADER, LLMC_U16, LLMC_U32, TokenFormat};

/// What the manifest says about the token files.
#[derive(Clone, Debug, Default)]
struct Options {
    vocab: Option<u64>,
    eod: Option<u32>,
    allow_special: bool,
    dtype: Option<Dtype>,
}

impl Options {
    fn from(manifest: Option<&Manifest>) -> Self {
        let Some(m) = manifest else {
            return Self::default();
        };
        let o = &m.options;
        Self {
            vocab: o.get("vocab_size").and_then(Value::as_u64),
            eod: o
                .get("eod_id")
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok()),
            allow_special: o.get("allow_special").and_then(Value::as_bool) == Some(true),
            dtype: o
                .get("dtype")
                .and_then(Value::as_str)
                .and_then(Dtype::from_name),
        }
    }
}

/// The inspector for a token file, if `ctx` and `head` say it is one.
pub fn inspector_for(ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>> {
    let recorded = ctx
        .entry
        .and_then(|e| e.format.as_deref())
        .and_then(TokenFormat::from_name);
    let opts = Options::from(ctx.manifest);
    let entry = ctx.entry.cloned();
    let path = ctx.path.to_string();
    let is_idx = path.ends_with(".idx");
    let is_bin = path.ends_with(".bin");
    match recorded {
        Some(TokenFormat::Megatron) if is_idx => Some(Box::new(IdxInspector::new(path))),
        Some(TokenFormat::Megatron) => Some(Box::new(BinInspector::megatron(
            ctx.root, path, entry, opts,
        ))),
        Some(TokenFormat::Nanogpt) => {
            let dtype = opts.dtype.unwrap_or(Dtype::Uint16);
            Some(Box::new(BinInspector::raw(
                TokenFormat::Nanogpt,
                path,
                dtype,
                0,
                entry,
                opts,
            )))
        }
        Some(TokenFormat::Llmc) => Some(Box::new(BinInspector::raw(
            TokenFormat::Llmc,
            path,
            Dtype::Uint16,
            LLMC_HEADER,
            entry,
            opts,
        ))),
        None if is_idx && head.starts_with(IDX_MAGIC) => Some(Box::new(IdxInspector::new(path))),
        None if is_bin && idx_header(ctx.root, &path).is_some() => Some(Box::new(
            BinInspector::megatron(ctx.root, path, entry, opts),
        )),
        None if is_bin && llmc_magic(head).is_some() => Some(Box::new(BinInspector::raw(
            TokenFormat::Llmc,
            path,
            Dtype::Uint16,
            LLMC_HEADER,
            entry,
            opts,
        ))),
        None => None,
    }
}

fn idx_path(bin: &str) -> String {
    format!("{}.idx", bin.trim_end_matches(".bin"))
}

/// (dtype, sequences, documents + 1) of the `.idx` beside `bin`, if it has a valid header.
fn idx_header(root: &Path, bin: &str) -> Option<(Dtype, u64, u64)> {
    let mut head = [0u8; IDX_HEADER as usize];
    File::open(root.join(idx_path(bin)))
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    parse_idx_header(&head).ok()
}

fn parse_idx_header(head: &[u8]) -> Result<(Dtype, u64, u64), String> {
    if !head.starts_with(IDX_MAGIC) {
        return Err("not a Megatron index: the magic is not MMIDIDX\\0\\0".into());
    }
    let u64_at = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
    let version = u64_at(9);
    if version != 1 {
        return Err(format!("version {version}; Megatron reads only version 1"));
    }
    let dtype = match head[17] {
        8 => Dtype::Uint16,
        4 => Dtype::Int32,
        code => {
            return Err(format!(
                "dtype code {code}: token files use 8 (uint16) or 4 (int32)"
            ));
        }
    };
    Ok((dtype, u64_at(18), u64_at(26)))
}

fn llmc_magic(head: &[u8]) -> Option<Dtype> {
    let word = |i: usize| {
        Some(i32::from_le_bytes(
            head.get(4 * i..4 * i + 4)?.try_into().ok()?,
        ))
    };
    match (word(0)?, word(1)?) {
        v if v == LLMC_U16 => Some(Dtype::Uint16),
        v if v == LLMC_U32 => Some(Dtype::Uint32),
        _ => None,
    }
}

/// Streaming check of a Megatron `.idx`.
struct IdxInspector {
    path: String,
    head: Vec<u8>,
    /// (dtype, sequences, boundaries)
    header: Option<(Dtype, u64, u64)>,
    offset: u64,
    word: Vec<u8>,
    /// Running sum of lengths × item size, and the same weighted for the pointer check.
    sum: i64,
    sizes_hash: u64,
    pointers_hash: u64,
    /// r^k of the next length and of the next pointer (polynomial fingerprints: pointers
    /// are checked against the running sums without holding the lengths).
    weight: u64,
    pointer_weight: u64,
    last_pointer: i64,
    last_boundary: i64,
    findings: Vec<Finding>,
}

const HASH_BASE: u64 = 0x9e37_79b9_7f4a_7c15;

impl IdxInspector {
    fn new(path: String) -> Self {
        Self {
            path,
            head: Vec::with_capacity(IDX_HEADER as usize),
            header: None,
            offset: 0,
            word: Vec::with_capacity(8),
            sum: 0,
            sizes_hash: 0,
            pointers_hash: 0,
            weight: 1,
            pointer_weight: 1,
            last_pointer: -1,
            last_boundary: -1,
            findings: Vec::new(),
        }
    }

    fn bad(&mut self, at: u64, message: String) {
        if self
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::BadIndex)
            .count()
            < 3
        {
            self.findings
                .push(Finding::error(FindingKind::BadIndex, &self.path, message).at(at));
        }
    }

    /// One array element starting at `at`.
    fn element(&mut self, at: u64, bytes: &[u8]) {
        let Some((dtype, s, d)) = self.header else {
            return;
        };
        let sizes_end = IDX_HEADER + 4 * s;
        let pointers_end = sizes_end + 8 * s;
        if at < sizes_end {
            let len = i32::from_le_bytes(bytes.try_into().expect("4 bytes"));
            if len < 0 {
                self.bad(
                    at,
                    format!(
                        "sequence {} has a negative length {len}",
                        (at - IDX_HEADER) / 4
                    ),
                );
            }
            self.sizes_hash = self
                .sizes_hash
                .wrapping_add(self.weight.wrapping_mul(self.sum as u64));
            self.weight = self.weight.wrapping_mul(HASH_BASE);
            self.sum = self.sum.wrapping_add(i64::from(len) * dtype.size() as i64);
        } else if at < pointers_end {
            let k = (at - sizes_end) / 8;
            let p = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            if k == 0 && p != 0 {
                self.bad(at, format!("the first pointer is {p}, not 0"));
            } else if p < self.last_pointer {
                self.bad(
                    at,
                    format!(
                        "pointer {k} ({p}) is below the one before ({})",
                        self.last_pointer
                    ),
                );
            }
            self.last_pointer = p;
            self.pointers_hash = self
                .pointers_hash
                .wrapping_add(self.pointer_weight.wrapping_mul(p as u64));
            self.pointer_weight = self.pointer_weight.wrapping_mul(HASH_BASE);
        } else if at < pointers_end + 8 * d {
            let k = (at - pointers_end) / 8;
            let b = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            if k == 0 && b != 0 {
                self.bad(at, format!("the first document boundary is {b}, not 0"));
            } else if b < self.last_boundary {
                self.bad(at, format!("document boundary {k} ({b}) is below the one before ({}): document indices must not decrease", self.last_boundary));
            } else if b as u64 > s {
                self.bad(
                    at,
                    format!("document boundary {k} ({b}) is past the {s} sequences"),
                );
            }
            if k + 1 == d && b as u64 != s {
                self.bad(
                    at,
                    format!("the last document boundary is {b}, not the sequence count {s}"),
                );
            }
            self.last_boundary = b;
        }
    }
}

impl Inspector for IdxInspector {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.offset < IDX_HEADER {
                let take = ((IDX_HEADER - self.offset) as usize).min(data.len());
                self.head.extend_from_slice(&data[..take]);
                data = &data[take..];
                self.offset += take as u64;
                if self.offset == IDX_HEADER {
                    match parse_idx_header(&self.head) {
                        Ok(h) => self.header = Some(h),
                        Err(reason) => {
                            self.findings.push(
                                Finding::error(FindingKind::BadHeader, &self.path, reason).at(0),
                            );
                            self.offset = u64::MAX / 2;
                        }
                    }
                }
                continue;
            }
            let Some((_, s, _)) = self.header else {
                self.offset = self.offset.saturating_add(data.len() as u64);
                return;
            };
            let width = if self.offset < IDX_HEADER + 4 * s {
                4
            } else {
                8
            };
            let need = width - self.word.len();
            let take = need.min(data.len());
            self.word.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.word.len() == width {
                let at = self.offset + take as u64 - width as u64;
                let word = std::mem::take(&mut self.word);
                self.element(at, &word);
                self.word = word;
                self.word.clear();
            }
            self.offset += take as u64;
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        let mut facts = BTreeMap::new();
        if let Some((dtype, s, d)) = self.header {
            let expected = IDX_HEADER + 12 * s + 8 * d;
            let size = self.offset;
            if size < expected {
                self.findings.push(
                    Finding::error(
                        FindingKind::Truncated,
                        &self.path,
                        "the index ends before the arrays its header counts",
                    )
                    .at(size)
                    .values(expected, size),
                );
            } else if size > expected {
                self.findings.push(
                    Finding::error(
                        FindingKind::TrailingData,
                        &self.path,
                        "bytes after the arrays the header counts",
                    )
                    .range(expected, size)
                    .values(expected, size),
                );
            } else if self.sizes_hash != self.pointers_hash {
                self.findings.push(Finding::error(
                    FindingKind::BadIndex,
                    &self.path,
                    "the sequence pointers are not the running sum of the lengths × the item size",
                ).at(IDX_HEADER + 4 * s));
            }
            facts.insert("bin_bytes".into(), Value::from(self.sum));
            facts.insert("sequences".into(), Value::from(s));
            facts.insert("documents".into(), Value::from(d.saturating_sub(1)));
            facts.insert("dtype".into(), Value::from(dtype.name()));
        } else if self.offset < IDX_HEADER {
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &self.path,
                    "shorter than the 34-byte Megatron index header",
                )
                .at(self.offset),
            );
        }
        Inspection {
            format: "megatron".into(),
            facts,
            findings: self.findings,
            ..Inspection::default()
        }
    }
}

/// Streaming check of a token file's ids.
struct BinInspector {
    format: TokenFormat,
    path: String,
    dtype: Dtype,
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
    fn raw(
        format: TokenFormat,
        path: String,
        dtype: Dtype,
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

    fn megatron(root: &Path, path: String, entry: Option<FileEntry>, opts: Options) -> Self {
        let header = idx_header(root, &path);
        let dtype = header.map(|h| h.0).or(opts.dtype).unwrap_or(Dtype::Uint16);
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
            Dtype::Uint16 => {
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
        if !self.partial.is_empty() {
            let at = self.offset;
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &path,
                    format!("the file ends inside a {}-byte token", self.dtype.size()),
                )
                .at(at),
            );
        }
        if self.format == TokenFormat::Llmc && self.offset < self.header_len {
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &path,
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
                self.findings.push(Finding::error(kind, &path, "the file size is not 1024 + the header's token count × the token size (llm.c refuses it)").at(size.min(expected)).values(expected, size));
            }
        }
        if let Some((at, id)) = self.first_out_of_range {
            let vocab = self.opts.vocab.unwrap_or(0);
            self.findings.push(
                Finding::error(
                    FindingKind::TokenOutOfRange,
                    &path,
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
            self.findings.push(Finding::error(FindingKind::EodMismatch, &path, format!("{} sequence(s) do not end with the end-of-document token; the first is shown", self.misplaced)).at(at));
        }
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
                        &path,
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
                    &path,
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
                    &path,
                    "its index holds a different number of documents than the manifest records",
                )
                .values(recorded, found),
            );
        }
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

fn read_id(bytes: &[u8], dtype: Dtype) -> u32 {
    match dtype {
        Dtype::Uint16 => u32::from(u16::from_le_bytes([bytes[0], bytes[1]])),
        _ => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
    }
}

/// Dataset-level checks: every Megatron `.idx` has its `.bin`, of the size it says.
pub fn check_layout(
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (path, inspection) in inspections {
        if inspection.format != "megatron" || !path.ends_with(".idx") {
            continue;
        }
        let Some(expected) = inspection.facts.get("bin_bytes").and_then(Value::as_u64) else {
            continue;
        };
        let bin = format!("{}.bin", path.trim_end_matches(".idx"));
        match files.get(&bin) {
            Some(&size) if size != expected => {
                let (kind, message) = if size < expected {
                    (
                        FindingKind::Truncated,
                        format!("shorter than its index `{path}` says"),
                    )
                } else {
                    (
                        FindingKind::TrailingData,
                        format!("longer than its index `{path}` says"),
                    )
                };
                findings.push(
                    Finding::error(kind, &bin, message)
                        .at(size.min(expected))
                        .values(expected, size),
                );
            }
            Some(_) => {}
            None => {
                let listed = manifest.is_some_and(|m| m.files.iter().any(|f| f.path == bin));
                if !listed {
                    findings.push(Finding::error(
                        FindingKind::MissingFile,
                        &bin,
                        format!("the token file of index `{path}` is not present"),
                    ));
                }
            }
        }
    }
    findings
}
