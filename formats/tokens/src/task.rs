//! `tokenize` split into tasks that share one output, finished by `merge`. The rules
//! the tasks share with `pack` are in [`shardsmith_store::tasks`].
//!
//! The input files, listed alike by every task, are cut into contiguous shares balanced
//! by bytes, so at document boundaries. Task `i` tokenizes its share as a run of its own
//! into `OUTPUT/.shardsmith-task-NNNNNN/` (resumable as any run, under its own lock),
//! then records it. The final step checks that every task recorded its share of the
//! same run, moves the token files into OUTPUT numbered on across the tasks in input
//! order, and writes one manifest. The documents and their tokens come out in the same
//! order as from a single run, so the `.bin` payloads concatenated (after llm.c's
//! headers) are the same bytes; where a file ends can differ: each task's last file is
//! cut where its share ends, not at `--shard-tokens`.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use shardsmith_manifest::{FileEntry, Manifest, ManifestKind, TEMP_PREFIX};
use shardsmith_store::OutputSink;
use shardsmith_store::resume::Job;
use shardsmith_store::tasks::{self, FinishReport, Head, TaskId};

use super::input::{InputKind, StreamCompression, TextInput};
use super::run::{Candidate, candidate, is_own_file, tokenize};
use super::settings::{TokenizeObserver, TokenizeSettings};
use super::shard_record::SKIPPED_LISTED;
use super::tokenizer::Tokenizer;
use crate::{Error, Result};

/// A task's part of one input file: the whole file, or a span of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Piece {
    file: usize,
    span: Option<Range<u64>>,
}

/// What a `tokenize` task records besides the [`Head`].
#[derive(Serialize, Deserialize)]
struct Share {
    /// Its pieces of the input, in order.
    pieces: Vec<Piece>,
    /// Input files in the whole run, and their sizes.
    sizes: Vec<u64>,
    /// The manifest of its own run, or none when its input held no document.
    manifest: Option<Manifest>,
}

/// True when a file can be cut between tasks at any byte: uncompressed JSONL, whose
/// records are lines (a task takes the lines that start in its span).
fn splittable(input: &TextInput) -> bool {
    input.kind == InputKind::Jsonl(StreamCompression::None)
}

/// The pieces of task `index` of `count`: the bytes of all input files, in order, cut
/// into `count` equal ranges; a file that lies across a cut is split there when it can
/// be ([`splittable`]), else it goes whole to the task in whose range it starts.
fn pieces(inputs: &[TextInput], index: u32, count: u32) -> Vec<Piece> {
    let total: u128 = inputs.iter().map(|f| u128::from(f.size)).sum();
    let cut = |k: u32| total * u128::from(k) / u128::from(count);
    let (lo, hi) = (cut(index), cut(index + 1));
    let last = index + 1 == count;
    let mut out = Vec::new();
    let mut start = 0u128;
    for (file, input) in inputs.iter().enumerate() {
        let end = start + u128::from(input.size);
        let starts_here = start >= lo && (start < hi || (last && start == total));
        if splittable(input) && input.size > 0 {
            let (a, b) = (start.max(lo), end.min(hi));
            if a < b {
                let span = ((a - start) as u64)..((b - start) as u64);
                let whole = span.start == 0 && span.end == input.size;
                out.push(Piece {
                    file,
                    span: (!whole).then_some(span),
                });
            }
        } else if starts_here {
            out.push(Piece { file, span: None });
        }
        start = end;
    }
    out
}

/// What one task did.
#[derive(Clone, Debug)]
pub struct TaskReport {
    /// Which task, of how many, and where that was read.
    pub task: TaskId,
    /// Its first and last input file (indices into the listing; a file cut between tasks
    /// is in two), of how many.
    pub inputs: (Option<(usize, usize)>, usize),
    /// Bytes of its input files, and of all.
    pub bytes: (u64, u64),
    /// Files it wrote, and files kept from an interrupted attempt.
    pub written: usize,
    pub resumed: usize,
    /// Documents and tokens it wrote.
    pub documents: u64,
    pub tokens: u64,
    /// The run was finished already: nothing was done.
    pub already_complete: bool,
}

fn job(is_own: &dyn Fn(&str) -> bool) -> Job<'_> {
    Job {
        command: "tokenize",
        verb: "tokenized",
        kind: ManifestKind::Tokenize,
        is_own,
    }
}

/// Where task `index` writes its own run.
fn task_dir(index: u32) -> String {
    format!("{TEMP_PREFIX}task-{index:06}")
}

/// Tokenizes task `task`'s share of `inputs` into the shared output `sink`.
pub fn tokenize_share(
    inputs: &[TextInput],
    sink: &dyn OutputSink,
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    task: &TaskId,
    observer: &dyn TokenizeObserver,
) -> Result<TaskReport> {
    settings.check()?;
    if settings.force {
        return Err(Error::Setting(
            "--force cannot be combined with a task index: each task would remove what the others wrote; empty the output first".into(),
        ));
    }
    let Candidate {
        manifest: candidate,
        fingerprint,
        ..
    } = candidate(inputs, tokenizer, settings)?;
    let prefix = settings.prefix.clone();
    let is_own = |name: &str| is_own_file(name, &prefix);
    let sizes: Vec<u64> = inputs.iter().map(|f| f.size).collect();
    let mine = pieces(inputs, task.index, task.count);
    let share_inputs: Vec<TextInput> = mine
        .iter()
        .map(|p| TextInput {
            span: p.span.clone(),
            ..inputs[p.file].clone()
        })
        .collect();
    let mut report = share_report(task, inputs, &mine, &sizes);
    let _lock = sink.lock_named(&tasks::lock_tag(task.index))?;
    if tasks::prepare(sink, &job(&is_own), &candidate, &fingerprint)?.is_some() {
        report.already_complete = true;
        return Ok(report);
    }
    let claim = tasks::claim(sink, task, "tokenize")?;
    let manifest = if share_inputs.is_empty() {
        None
    } else {
        let own = sink.child(&task_dir(task.index))?;
        tokenize_own(
            &share_inputs,
            own.as_ref(),
            tokenizer,
            settings,
            observer,
            &mut report,
        )?
    };
    let head = Head {
        fingerprint,
        index: task.index,
        count: task.count,
        source: task.source.clone(),
        host: tasks::host(),
        pid: std::process::id(),
        manifest: candidate,
    };
    let share = Share {
        pieces: mine,
        sizes,
        manifest,
    };
    tasks::save(sink, &head, &claim, &share)?;
    Ok(report)
}

/// What task `task` reports before it starts: its share `mine` of `inputs` (of
/// `sizes`).
fn share_report(task: &TaskId, inputs: &[TextInput], mine: &[Piece], sizes: &[u64]) -> TaskReport {
    TaskReport {
        task: task.clone(),
        inputs: (
            mine.first().zip(mine.last()).map(|(a, b)| (a.file, b.file)),
            inputs.len(),
        ),
        bytes: (
            mine.iter()
                .map(|p| p.span.as_ref().map_or(sizes[p.file], |s| s.end - s.start))
                .sum(),
            sizes.iter().sum(),
        ),
        written: 0,
        resumed: 0,
        documents: 0,
        tokens: 0,
        already_complete: false,
    }
}

/// Tokenizes a task's (non-empty) share `share_inputs` as a run of its own in `own`,
/// counted into `report`; `None` when the share holds no document (and that is allowed).
fn tokenize_own(
    share_inputs: &[TextInput],
    own: &dyn OutputSink,
    tokenizer: &Tokenizer,
    settings: &TokenizeSettings,
    observer: &dyn TokenizeObserver,
    report: &mut TaskReport,
) -> Result<Option<Manifest>> {
    match tokenize(share_inputs, own, tokenizer, settings, observer) {
        Ok(done) => {
            report.written = done.shards_written;
            report.resumed = done.shards_resumed;
            report.documents = done.manifest.totals.documents.unwrap_or(0);
            report.tokens = done.manifest.totals.tokens.unwrap_or(0);
            Ok(Some(done.manifest))
        }
        // Files that hold no document are a share with nothing in it.
        Err(Error::NoDocuments { .. }) if !settings.strict => Ok(None),
        Err(e) => Err(e),
    }
}

/// Checks that the tasks' pieces cover every input file exactly once, in order.
fn covered(found: &[(Head, Share)]) -> Result<()> {
    let sizes = &found[0].1.sizes;
    // The next file and byte every piece must start at.
    let (mut file, mut at) = (0usize, 0u64);
    for (head, share) in found {
        for piece in &share.pieces {
            let span = piece
                .span
                .clone()
                .unwrap_or(0..sizes.get(piece.file).copied().unwrap_or(0));
            if share.sizes != *sizes || piece.file != file || span.start != at {
                return Err(Error::Setting(format!(
                    "task {} took input file {} from byte {}, where the tasks before it left off at file {file} byte {at}: the tasks did not list the input alike; run them again",
                    head.index, piece.file, span.start
                )));
            }
            at = span.end;
            if at >= sizes[file] {
                (file, at) = (file + 1, 0);
            }
        }
    }
    // Files nobody took can only be empty ones at the end.
    if sizes[file.min(sizes.len())..].iter().any(|&n| n > 0) {
        return Err(Error::Setting(format!(
            "the tasks took input files up to {file} of {}: the tasks did not list the input alike; run them again",
            sizes.len()
        )));
    }
    Ok(())
}

/// The number in `PREFIX_NNNNNN.EXT`, and the extension.
fn numbered<'a>(name: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('_')?;
    let (digits, ext) = rest.split_once('.')?;
    Some((digits.parse().ok()?, ext))
}

/// Finishes a split `tokenize` run in `sink`: the token files moved into place and
/// numbered on across the tasks, then `SHA256SUMS` and the manifest.
pub fn finish(sink: &dyn OutputSink) -> Result<FinishReport> {
    let found: Vec<(Head, Share)> = tasks::load_all(sink, &job(&|_| false))?;
    covered(&found)?;
    let sources = tasks::sources(&found.iter().map(|(h, _)| h).collect::<Vec<_>>());
    let mut manifest = found[0].0.manifest.clone();
    let prefix = manifest
        .options
        .get("prefix")
        .and_then(|p| p.as_str())
        .unwrap_or_default()
        .to_string();
    let present: std::collections::BTreeSet<String> = sink.list()?.into_iter().collect();
    let mut files: Vec<FileEntry> = Vec::new();
    let mut skipped = Vec::new();
    let mut skipped_total = 0;
    let mut duplicates: Option<shardsmith_manifest::Duplicates> = None;
    let mut offset = 0;
    let mut renamed = 0;
    for (head, share) in &found {
        let Some(own) = &share.manifest else { continue };
        let dir = task_dir(head.index);
        let mut shards = 0;
        for entry in &own.files {
            let Some((n, ext)) = numbered(&entry.path, &prefix) else {
                continue;
            };
            shards = shards.max(n + 1);
            let target = format!("{prefix}_{:06}.{ext}", offset + n);
            let from = format!("{dir}/{}", entry.path);
            // A re-run of an interrupted merge finds it moved already.
            if sink.size(&from)?.is_some() {
                sink.rename(&from, &target)?;
            } else if !present.contains(&target) {
                return Err(Error::Setting(format!(
                    "`{}/{from}`, written by task {}, is missing: run task {} again, then merge again",
                    sink.describe(),
                    head.index,
                    head.index
                )));
            }
            renamed += 1;
            let mut moved = entry.clone();
            moved.path = target;
            files.push(moved);
        }
        offset += shards;
        skipped.extend(own.skipped.iter().cloned());
        skipped_total += own.skipped_total.unwrap_or(0);
        // Each task leaves out the repeats within its own share.
        if let Some(own) = &own.duplicates {
            duplicates.get_or_insert_default().extend(own.clone());
        }
    }
    if files.is_empty() {
        return Err(Error::NoDocuments {
            root: sink.describe(),
            detail: ": no task found a document in its input files".into(),
        });
    }
    skipped.truncate(SKIPPED_LISTED);
    manifest.files = files;
    manifest.skipped = skipped;
    manifest.skipped_total = (skipped_total > 0).then_some(skipped_total);
    manifest.duplicates = duplicates;
    // The tasks' own runs go before the manifest: a merge killed in between finds the
    // files where they were moved (the task records say which).
    for (head, _) in &found {
        sink.remove(&task_dir(head.index))?;
    }
    // Complete from here on: what cannot be cleared is said, not failed on.
    let mut warnings: Vec<String> = shardsmith_store::finish::seal(sink, &mut manifest)?
        .into_iter()
        .collect();
    if let Err(e) = tasks::clean_up(sink) {
        warnings.push(shardsmith_store::finish::left_state(sink, &e));
    }
    Ok(FinishReport {
        warnings,
        manifest,
        tasks: found.len() as u32,
        sources,
        renamed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(sizes: &[(u64, bool)]) -> Vec<TextInput> {
        let dir = tempfile::tempdir().unwrap();
        let source: std::sync::Arc<dyn shardsmith_store::InputSource> =
            std::sync::Arc::new(shardsmith_store::LocalTree::new(dir.path()));
        sizes
            .iter()
            .enumerate()
            .map(|(i, &(size, plain))| TextInput {
                source: source.clone(),
                rel: format!("{i}"),
                display: format!("{i}"),
                size,
                kind: InputKind::Jsonl(if plain {
                    StreamCompression::None
                } else {
                    StreamCompression::Gzip
                }),
                span: None,
            })
            .collect()
    }

    #[test]
    fn plain_jsonl_is_cut_at_the_byte_a_compressed_file_goes_whole() {
        let one = inputs(&[(1000, true)]);
        let spans: Vec<_> = (0..4).map(|i| pieces(&one, i, 4)).collect();
        assert_eq!(
            spans[0],
            [Piece {
                file: 0,
                span: Some(0..250)
            }]
        );
        assert_eq!(
            spans[3],
            [Piece {
                file: 0,
                span: Some(750..1000)
            }]
        );
        assert_eq!(
            pieces(&one, 0, 1),
            [Piece {
                file: 0,
                span: None
            }]
        );
        let mixed = inputs(&[
            (100, false),
            (300, true),
            (0, true),
            (600, false),
            (0, false),
        ]);
        let all: Vec<Vec<Piece>> = (0..3).map(|i| pieces(&mixed, i, 3)).collect();
        // Cuts at 333 and 666: the plain file is split at 333; the gzip'd one starting at
        // 400 goes whole to the task whose range holds its start; the empty files follow
        // their neighbours.
        assert_eq!(
            all[0],
            [
                Piece {
                    file: 0,
                    span: None
                },
                Piece {
                    file: 1,
                    span: Some(0..233)
                }
            ]
        );
        assert_eq!(
            all[1],
            [
                Piece {
                    file: 1,
                    span: Some(233..300)
                },
                Piece {
                    file: 2,
                    span: None
                },
                Piece {
                    file: 3,
                    span: None
                }
            ]
        );
        assert_eq!(
            all[2],
            [Piece {
                file: 4,
                span: None
            }]
        );
        for count in [1, 2, 3, 7, 64] {
            let n: usize = (0..count).map(|i| pieces(&mixed, i, count).len()).sum();
            assert!(n >= mixed.len(), "{count}: every file is somewhere");
        }
    }

    #[test]
    fn token_file_names_are_numbered_on() {
        assert_eq!(numbered("tok_000012.bin", "tok"), Some((12, "bin")));
        assert_eq!(numbered("tok_000012.idx", "tok"), Some((12, "idx")));
        assert_eq!(numbered("a_b_1234567.bin", "a_b"), Some((1_234_567, "bin")));
        assert_eq!(numbered("other_000001.bin", "tok"), None);
        assert_eq!(numbered("manifest.json", "tok"), None);
    }
}
