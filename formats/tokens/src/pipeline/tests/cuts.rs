//! Cut anywhere, read by any number of workers: the records and bytes of one sequential
//! read.

use std::path::Path;

use super::corpus::{FORMATS, corpus, gpt2, run, sequential, settings, snapshot};
use crate::batch::{Batch, Position, RecordKind};
use crate::input::{InputRoot, TextInput, list};
use crate::pipeline::plan::{CUT_BYTES, Job, Planner};
use crate::pipeline::read::read_pieces;
use crate::tokenizer::Scratch;
use crate::write::TokenFormat;

/// Every record of the units of pieces of `files` from `from` on, cut every `cut`
/// bytes, with its file, offset and bytes (lines are numbered by the writer).
fn cut_up(files: &[TextInput], from: Position, cut: u64) -> Vec<(usize, u64, Vec<u8>)> {
    let mut planner = Planner::new(files, "text", from, cut);
    let mut out = Vec::new();
    let mut batch = Batch::default();
    while let Some(unit) = planner.next_unit() {
        match unit.job {
            Job::Pieces(pieces) => {
                read_pieces(files, &pieces, &mut batch).unwrap();
                for r in &batch.records {
                    assert_eq!(r.kind, RecordKind::Json);
                    let bytes = batch.data[r.range.clone()].to_vec();
                    out.push((r.pos.file, r.pos.offset, bytes));
                }
            }
            Job::End(_) => {}
            _ => panic!("only plain JSONL here"),
        }
    }
    out
}

const TRICKY: [&str; 8] = [
    "",
    "\n",
    "\n\n\n",
    "{\"text\":\"one line, no newline\"}",
    "a\nbb\n\nccc\r\nd\r\n\r\neeeeeeeeeeeeeeee\nf",
    "{\"text\":\"é\"}\n\n{\"text\":\"日本\"}\r\n{\"te\nxt\":1}\nlast\n",
    "long-long-long-long-long-long-long-long-long-long-long\nx\n",
    "\r\n\r\n",
];

#[test]
fn the_lines_of_a_file_cut_anywhere_are_its_lines() {
    let dir = tempfile::tempdir().unwrap();
    for (i, text) in TRICKY.iter().enumerate() {
        let path = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&path, text).unwrap();
        let files = list(&[InputRoot::local(&path).unwrap()]).unwrap();
        let whole: Vec<_> = sequential(&files, Position::default())
            .into_iter()
            .map(|(p, b)| (p.file, p.offset, b))
            .collect();
        for cut in 1..=text.len() as u64 + 2 {
            assert_eq!(
                cut_up(&files, Position::default(), cut),
                whole,
                "{text:?} cut {cut}"
            );
            // Resumed at any record, whatever the cut.
            for (k, (_, offset, _)) in whole.iter().enumerate() {
                let from = Position {
                    file: 0,
                    offset: *offset,
                    line: k as u64 + 1,
                };
                assert_eq!(
                    cut_up(&files, from, cut),
                    whole[k..],
                    "{text:?} cut {cut} from {offset}"
                );
            }
        }
        // Spans (a split run's shares) cut anywhere hold the lines that start in them,
        // as the sequential reader reads them.
        for a in 0..=text.len() as u64 {
            for b in a..=text.len() as u64 {
                let span = vec![TextInput {
                    span: Some(a..b),
                    ..files[0].clone()
                }];
                let want: Vec<_> = sequential(&span, Position::default())
                    .into_iter()
                    .map(|(p, b)| (p.file, p.offset, b))
                    .collect();
                for cut in [1, 2, 3, 100] {
                    assert_eq!(
                        cut_up(&span, Position::default(), cut),
                        want,
                        "{text:?} span {a}..{b} cut {cut}"
                    );
                }
            }
        }
    }
}

#[test]
fn the_output_is_the_same_whatever_the_jobs_and_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    corpus(&input);
    let files = list(&[InputRoot::local(&input).unwrap()]).unwrap();
    assert_eq!(files.len(), 8);
    // The ids of every document, read in order by one thread, tokenized one by one.
    let mut want = Vec::new();
    let mut scratch = Scratch::default();
    for (pos, bytes) in sequential(&files, Position::default()) {
        let text = match files[pos.file].kind {
            crate::InputKind::Text => String::from_utf8(bytes).unwrap().into(),
            _ => match crate::json_text(&bytes, "text") {
                Ok(text) => text,
                Err(_) => continue,
            },
        };
        gpt2().encode(&text, &mut scratch, &mut want).unwrap();
        want.push(50256);
    }
    for (format, shard_tokens) in FORMATS {
        let reference = dir.path().join(format!("{format:?}"));
        let report = run(
            &files,
            &reference,
            &settings(format, shard_tokens, 1),
            CUT_BYTES,
        )
        .unwrap();
        let want_snapshot = snapshot(&reference);
        if format == TokenFormat::Nanogpt {
            let ids: Vec<u32> = want_snapshot
                .iter()
                .filter(|(name, _)| name.ends_with(".bin"))
                .flat_map(|(_, bytes)| bytes.chunks_exact(2))
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect();
            assert_eq!(ids, want, "the documents, in order");
            let skipped: Vec<String> = report
                .manifest
                .skipped
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        Path::new(&s.path).file_name().unwrap().to_string_lossy(),
                        s.reason
                    )
                })
                .collect();
            assert_eq!(report.manifest.skipped_total, Some(skipped.len() as u64));
            for (line, why) in [
                (6, "not a JSON object"),
                (10, "empty line"),
                (14, "no field"),
                (18, "is null"),
            ] {
                assert!(
                    skipped.iter().any(
                        |s| s.starts_with(&format!("a.jsonl line {line}: ")) && s.contains(why)
                    ),
                    "{line} {why}: {skipped:?}"
                );
            }
            assert!(
                skipped
                    .iter()
                    .any(|s| s.starts_with("d.jsonl line 2: empty line")),
                "{skipped:?}"
            );
        }
        for jobs in [1, 2, 3, 7] {
            for cut in [3, 64, 1000, CUT_BYTES] {
                let out = dir.path().join(format!("{format:?}-{jobs}-{cut}"));
                run(&files, &out, &settings(format, shard_tokens, jobs), cut).unwrap();
                assert!(
                    snapshot(&out) == want_snapshot,
                    "{format:?} -j {jobs}, cut every {cut} bytes"
                );
                std::fs::remove_dir_all(&out).unwrap();
            }
        }
    }
}
