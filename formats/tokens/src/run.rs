//! A `tokenize` run: settings, the output directory and resume, the manifest. The
//! threads are in [`super::pipeline`]; see the module documentation of [`super`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use shardsmith_manifest::{DEFAULT_CHUNK_SIZE, InputSummary, Manifest, ManifestKind, sha256_hex};

use super::input::{Position, TextInput};
use super::pipeline::{CUT_BYTES, Output, Planner, first_line, pipeline};
use super::settings::{TokenizeObserver, TokenizeSettings};
use super::shard_record::{ShardRecord, Stats};
use super::tokenizer::Tokenizer;
use super::write::{TokenDtype, TokenFormat};
use crate::{Error, Result};
use shardsmith_store::OutputSink;
use shardsmith_store::resume::{self, Job, Start};

/// What a `tokenize` run did.
#[derive(Clone, Debug)]
pub struct TokenizeReport {
    /// The manifest written (or found complete).
    pub manifest: Manifest,
    /// Shards written by this run.
    pub shards_written: usize,
    /// Shards kept from an interrupted run.
    pub shards_resumed: usize,
    /// The output already held this exact dataset; nothing was written.
    pub already_complete: bool,
    /// Input bytes read by this run.
    pub input_bytes_read: u64,
    /// What the user should know though the run succeeded (state left behind).
    pub warnings: Vec<String>,
}

/// Tokenizes `inputs` into `sink`.
pub fn tokenize(
    inputs: &[TextInput],
    sink: &dyn OutputSink,
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    observer: &dyn TokenizeObserver,
) -> Result<TokenizeReport> {
    tokenize_cut(inputs, sink, tokenizer, settings, observer, CUT_BYTES)
}

/// [`tokenize`], plain files cut into units of `cut` bytes (the output is the same
/// whatever the cut: the tests cut at every few bytes).
pub(crate) fn tokenize_cut(
    inputs: &[TextInput],
    sink: &dyn OutputSink,
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    observer: &dyn TokenizeObserver,
    cut: u64,
) -> Result<TokenizeReport> {
    settings.check()?;
    if inputs.is_empty() {
        return Err(Error::NoDocuments {
            root: "the input".into(),
            detail: ": no .jsonl, .json, .ndjson (optionally .gz or .zst), .parquet, .txt or .md files found".into(),
        });
    }
    let Candidate {
        manifest,
        fingerprint,
        vocab,
        dtype,
        eod,
    } = candidate(inputs, tokenizer, settings)?;

    let _lock = sink.lock()?;
    let prefix = settings.prefix.clone();
    let is_own = |name: &str| is_own_file(name, &prefix);
    let job = Job {
        command: "tokenize",
        verb: "tokenized",
        kind: ManifestKind::Tokenize,
        is_own: &is_own,
    };
    let resuming = match resume::prepare(sink, &job, &manifest, &fingerprint, settings.force)? {
        Start::Complete(existing) => return Ok(TokenizeReport::complete(*existing)),
        Start::Resume => true,
        Start::Fresh => false,
    };
    let result = (|| {
        let records = if resuming {
            resumable(sink, &fingerprint, &settings.prefix)?
        } else {
            Vec::new()
        };
        let shards_resumed = records.len();
        observer.planned(inputs.iter().map(|f| f.size).sum());
        let (start, out) = output_after(
            records,
            sink,
            inputs,
            settings,
            dtype,
            vocab,
            eod.map(|(_, id)| id),
        );
        let planner = Planner::new(inputs, &settings.field, start, cut);
        let out = pipeline(planner, tokenizer, settings, out, &fingerprint, observer)?;
        finish(sink, inputs, &out, manifest, shards_resumed)
    })();
    if result.is_err() {
        // Nothing committed: the output is left as it was, not locked by a run that
        // cannot be finished. Otherwise the state stays for a resume.
        resume::abandon(sink, &is_own);
    }
    result
}

impl TokenizeReport {
    /// The report of a run that found the output already complete: nothing written.
    fn complete(manifest: Manifest) -> Self {
        TokenizeReport {
            manifest,
            shards_written: 0,
            shards_resumed: 0,
            already_complete: true,
            input_bytes_read: 0,
            warnings: Vec::new(),
        }
    }
}

/// The output as the shards in `records` (kept from an interrupted run) left it, and
/// the input position where the next shard starts.
fn output_after<'a>(
    records: Vec<ShardRecord>,
    sink: &'a dyn OutputSink,
    inputs: &'a [TextInput],
    settings: &'a TokenizeSettings,
    dtype: TokenDtype,
    vocab: u32,
    eod: Option<u32>,
) -> (Position, Output<'a>) {
    let (start, carry, stats) = records.last().map_or_else(
        || (Position::default(), 0, Stats::default()),
        |r| (r.next, r.carry, r.stats.clone()),
    );
    let seen = settings.dedup.then(|| {
        records
            .iter()
            .flat_map(|r| &r.kept)
            .filter_map(|(digest, pos)| Some((parse_digest(digest)?, *pos)))
            .collect()
    });
    let out = Output {
        seen,
        kept: Vec::new(),
        sink,
        format: settings.format,
        dtype,
        vocab,
        prefix: &settings.prefix,
        limit: settings.shard_tokens,
        eod,
        strict: settings.strict,
        inputs,
        current: None,
        index: records.len(),
        carry,
        stats,
        records,
        input_bytes: 0,
        line: (
            start.file,
            match inputs.get(start.file) {
                Some(input) if start.offset == 0 => first_line(input),
                _ => start.line,
            },
        ),
    };
    (start, out)
}

/// A digest as a record keeps it (32 hex digits).
fn parse_digest(text: &str) -> Option<crate::work::TextDigest> {
    let mut out = [0u8; 16];
    if text.len() != 32 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The run's end: refused when no document was tokenized, else the manifest of every
/// shard sealed (`SHA256SUMS`, then `manifest.json`).
fn finish(
    sink: &dyn OutputSink,
    inputs: &[TextInput],
    out: &Output<'_>,
    mut manifest: Manifest,
    shards_resumed: usize,
) -> Result<TokenizeReport> {
    if out.stats.documents == 0 {
        return Err(Error::NoDocuments {
            root: inputs[0].display.clone(),
            detail: match out.stats.skipped.first() {
                Some(first) => format!(
                    ": all {} record(s) were left out; first: `{}` {}",
                    out.stats.skipped_total, first.path, first.reason
                ),
                None => ": it holds no documents".into(),
            },
        });
    }
    manifest.files = out.records.iter().flat_map(|r| r.entries.clone()).collect();
    manifest.skipped = out.stats.skipped.clone();
    manifest.skipped_total = (out.stats.skipped_total > 0).then_some(out.stats.skipped_total);
    if out.seen.is_some() {
        manifest.duplicates = Some(out.stats.duplicates.clone());
    }
    let warnings = shardsmith_store::finish::seal(sink, &mut manifest)?
        .into_iter()
        .collect();
    Ok(TokenizeReport {
        shards_written: out.records.len() - shards_resumed,
        shards_resumed,
        manifest,
        already_complete: false,
        input_bytes_read: out.input_bytes,
        warnings,
    })
}

/// What a run of these inputs, tokenizer and settings would write, decided before any
/// I/O: the manifest without files, and its fingerprint.
pub(crate) struct Candidate {
    pub manifest: Manifest,
    pub fingerprint: String,
    pub vocab: u32,
    pub dtype: TokenDtype,
    pub eod: Option<(String, u32)>,
}

pub(crate) fn candidate(
    inputs: &[TextInput],
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
) -> Result<Candidate> {
    let vocab = tokenizer.vocab_size();
    let dtype = settings.format.dtype(vocab)?;
    let eod = if settings.eod {
        Some(tokenizer.eod(settings.eod_token.as_deref())?)
    } else {
        None
    };
    let mut manifest = Manifest::new(ManifestKind::Tokenize, DEFAULT_CHUNK_SIZE, Vec::new());
    manifest.format = Some(settings.format.name().into());
    manifest.options = options(settings, tokenizer, dtype, eod.as_ref());
    manifest.input = Some(input_summary(inputs));
    let fingerprint = resume::fingerprint(&manifest, Some("tokenize"));
    Ok(Candidate {
        manifest,
        fingerprint,
        vocab,
        dtype,
        eod,
    })
}

/// True for `PREFIX_NNNNNN.bin` and `PREFIX_NNNNNN.idx`.
pub(crate) fn is_own_file(name: &str, prefix: &str) -> bool {
    let Some(rest) = name.strip_prefix(prefix).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let Some(digits) = rest
        .strip_suffix(".bin")
        .or_else(|| rest.strip_suffix(".idx"))
    else {
        return false;
    };
    digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The records of the shards an interrupted run finished, in order, up to the first
/// one missing or changed; every later file of ours is removed.
fn resumable(sink: &dyn OutputSink, fingerprint: &str, prefix: &str) -> Result<Vec<ShardRecord>> {
    let mut records: Vec<ShardRecord> = Vec::new();
    loop {
        let name = TokenFormat::bin_name(prefix, records.len());
        let Some(record) = resume::load_done::<ShardRecord>(sink, fingerprint, "", &name)? else {
            break;
        };
        let mut intact = record.entries.first().is_some_and(|e| e.path == name);
        for entry in &record.entries {
            intact &= sink.size(&entry.path)? == Some(entry.size);
        }
        if !intact {
            break;
        }
        records.push(record);
    }
    let kept: BTreeSet<String> = records
        .iter()
        .flat_map(|r| r.entries.iter().map(|e| e.path.clone()))
        .collect();
    for name in sink.list()? {
        if is_own_file(&name, prefix) && !kept.contains(&name) {
            sink.remove(&name)?;
        }
    }
    Ok(records)
}

/// The options that decide the output bytes.
fn options(
    settings: &TokenizeSettings,
    tokenizer: &Tokenizer,
    dtype: TokenDtype,
    eod: Option<&(String, u32)>,
) -> BTreeMap<String, Value> {
    let mut o = BTreeMap::new();
    o.insert("tokenizer".into(), Value::from(tokenizer.name()));
    if let Some(sha) = tokenizer.file_sha256() {
        o.insert("tokenizer_sha256".into(), Value::from(sha));
    }
    o.insert("vocab_size".into(), Value::from(tokenizer.vocab_size()));
    o.insert("dtype".into(), Value::from(dtype.name()));
    o.insert("eod".into(), Value::from(eod.is_some()));
    o.insert(
        "eod_token".into(),
        eod.map_or(Value::Null, |(t, _)| Value::from(t.clone())),
    );
    o.insert(
        "eod_id".into(),
        eod.map_or(Value::Null, |(_, id)| Value::from(*id)),
    );
    o.insert("allow_special".into(), Value::from(settings.allow_special));
    o.insert("field".into(), Value::from(settings.field.clone()));
    o.insert(
        "shard_tokens".into(),
        settings.shard_tokens.map_or(Value::Null, Value::from),
    );
    o.insert("prefix".into(), Value::from(settings.prefix.clone()));
    if settings.dedup {
        o.insert("dedup".into(), Value::Bool(true));
    }
    o
}

fn input_summary(inputs: &[TextInput]) -> InputSummary {
    let mut lines = Vec::new();
    for f in inputs {
        lines.extend_from_slice(f.display.as_bytes());
        lines.push(0);
        lines.extend_from_slice(f.size.to_string().as_bytes());
        // A task's span of a file is another input than the file.
        if let Some(span) = &f.span {
            lines.extend_from_slice(format!("\0{}-{}", span.start, span.end).as_bytes());
        }
        lines.push(b'\n');
    }
    InputSummary {
        files: inputs.len() as u64,
        bytes: inputs.iter().map(|f| f.size).sum(),
        listing_sha256: sha256_hex(&lines),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_files_by_name() {
        assert!(is_own_file("tokens_000000.bin", "tokens"));
        assert!(is_own_file("tokens_000012.idx", "tokens"));
        assert!(is_own_file("a_b_1234567.bin", "a_b"));
        assert!(!is_own_file("tokens_12.bin", "tokens"));
        assert!(!is_own_file("tokens_000000.txt", "tokens"));
        assert!(!is_own_file("other_000000.bin", "tokens"));
        assert!(!is_own_file("manifest.json", "tokens"));
    }
}
