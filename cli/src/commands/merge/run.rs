//! `merge`'s run and its outcome.

use std::path::PathBuf;

use anyhow::Result;
use shardsmith_manifest::{MANIFEST_FILE, Manifest, ManifestKind};
use shardsmith_pack::merge::MergeReport;
use shardsmith_store::tasks::FinishReport;
use shardsmith_store::{Location, ObjectDir, OutputSink};

use super::settings::{Parts, Settings};
use crate::output::refuse;
use crate::report;
use crate::size::human_bytes;

/// What a merge did.
#[derive(Debug)]
pub enum Merged {
    /// The parts were merged into one dataset.
    Parts {
        output: PathBuf,
        report: MergeReport,
    },
    /// OUTPUT already holds the finished dataset: nothing was done.
    Finished { output: PathBuf, manifest: Manifest },
    /// The tasks of a split `pack` or `tokenize` were joined.
    Tasks {
        output: PathBuf,
        report: FinishReport,
        tokenize: bool,
    },
}

/// Merges the parts `settings` name, or finishes the split run OUTPUT holds.
pub fn run(settings: &Settings) -> Result<Merged> {
    if settings.parts.is_empty()
        && let Some(merged) = finish_tasks(settings)?
    {
        return Ok(merged);
    }
    let report = match (&settings.location, &settings.parts) {
        (Location::Remote(remote), Parts::Remote(given)) => {
            let sink = ObjectDir::new(remote.clone());
            let names = if given.is_empty() {
                shardsmith_pack::merge::parts_in(&sink)?
            } else {
                given.clone()
            };
            if names.is_empty() {
                refuse!(
                    Merge,
                    "no parts to merge in `{}` (no prefix inside holds a manifest.json)",
                    remote.url("")
                );
            }
            shardsmith_pack::merge::merge_parts(&sink, names)?
        }
        (_, Parts::Local(parts)) => shardsmith_pack::merge::merge(&settings.output, parts)?,
        (Location::Local(_), Parts::Remote(_)) => unreachable!("resolved together"),
    };
    Ok(Merged::Parts {
        output: settings.output.clone(),
        report,
    })
}

/// The final step of a `pack` or `tokenize` split into tasks, when OUTPUT holds one;
/// the finished dataset when OUTPUT holds one already.
fn finish_tasks(settings: &Settings) -> Result<Option<Merged>> {
    let remote;
    let local;
    let sink: &dyn OutputSink = match &settings.location {
        Location::Remote(r) => {
            remote = ObjectDir::new(r.clone());
            &remote
        }
        Location::Local(path) => {
            if !path.is_dir() {
                return Ok(None);
            }
            local = shardsmith_store::LocalDir::create(path)?;
            &local
        }
    };
    let output = settings.output.clone();
    let split = shardsmith_store::tasks::split_run(sink)?;
    let Some(split) = split else {
        // A finished run (split or not: their outputs are the same) has nothing to merge;
        // a finishing job run twice (a requeued Slurm job) is not an error.
        return Ok(finished(sink)?.map(|manifest| Merged::Finished { output, manifest }));
    };
    let tokenize = split == "tokenize";
    let report = if tokenize {
        shardsmith_tokens::task::finish(sink)?
    } else {
        shardsmith_pack::task::finish(sink)?
    };
    Ok(Some(Merged::Tasks {
        output,
        report,
        tokenize,
    }))
}

/// The manifest of a finished pack run in `sink`, if it holds one.
fn finished(sink: &dyn OutputSink) -> Result<Option<Manifest>> {
    Ok(sink
        .read(MANIFEST_FILE)?
        .and_then(|bytes| Manifest::parse(&bytes, MANIFEST_FILE.as_ref()).ok())
        .map(|(m, _)| m)
        .filter(|m| {
            m.kind == ManifestKind::Pack
                && m.input.is_some()
                && m.files.iter().all(|f| !f.path.contains('/'))
        }))
}

impl Merged {
    /// What the user should know though the run finished (state left behind).
    pub fn warnings(&self) -> &[String] {
        match self {
            Merged::Tasks { report, .. } => &report.warnings,
            _ => &[],
        }
    }

    /// The human summary.
    pub fn text(&self) -> String {
        match self {
            Merged::Parts { output, report } => {
                let m = &report.manifest;
                let mut text = format!(
                    "merged {} part(s) ({}) into {}: {} files, {}, {} samples\n",
                    report.parts.len(),
                    report.parts.join(", "),
                    output.display(),
                    m.totals.files,
                    human_bytes(m.totals.bytes),
                    m.totals.samples.unwrap_or(0)
                );
                if report.index {
                    text.push_str(&format!(
                        "  index     {}\n",
                        output.join("index.json").display()
                    ));
                }
                manifest_lines(&mut text, output, m);
                text
            }
            Merged::Finished { output, manifest } => format!(
                "already finished: {} holds one complete dataset ({} files, {} samples); nothing to merge\n",
                output.display(),
                manifest.totals.files,
                manifest.totals.samples.unwrap_or(0)
            ),
            Merged::Tasks {
                output,
                report,
                tokenize,
            } => tasks_text(output, report, *tokenize),
        }
    }

    /// The `--json` report.
    pub fn report(&self) -> report::Merge<'_> {
        let (output, m, parts, index, tasks, renamed) = match self {
            Merged::Parts { output, report } => (
                output,
                &report.manifest,
                &report.parts[..],
                report.index,
                0,
                0,
            ),
            Merged::Finished { output, manifest } => {
                (output, manifest, &[][..], has_index(manifest), 0, 0)
            }
            Merged::Tasks { output, report, .. } => (
                output,
                &report.manifest,
                &[][..],
                has_index(&report.manifest),
                report.tasks,
                report.renamed,
            ),
        };
        report::Merge {
            bytes: m.totals.bytes,
            command: "merge",
            files: m.totals.files,
            index,
            output: output.display().to_string(),
            parts,
            root_sha256: &m.root_sha256,
            samples: m.totals.samples,
            tasks,
            renamed,
            version: report::VERSION,
        }
    }
}

fn has_index(m: &Manifest) -> bool {
    m.files.iter().any(|f| f.path == "index.json")
}

fn manifest_lines(text: &mut String, output: &std::path::Path, m: &Manifest) {
    crate::output::manifest_lines(
        text,
        &output.join(MANIFEST_FILE).display().to_string(),
        &m.root_sha256,
    );
}

fn tasks_text(output: &std::path::Path, report: &FinishReport, tokenize: bool) -> String {
    let m = &report.manifest;
    let contents = match m.totals.documents {
        Some(documents) => format!(
            "{documents} documents, {} tokens",
            m.totals.tokens.unwrap_or(0)
        ),
        None => format!("{} samples", m.totals.samples.unwrap_or(0)),
    };
    let mut text = format!(
        "finished the run of {} task(s) (index from {}) in {}: {} files, {}, {contents}\n",
        report.tasks,
        report.sources.join("; "),
        output.display(),
        m.totals.files,
        human_bytes(m.totals.bytes),
    );
    if report.renamed > 0 {
        text.push_str(&if tokenize {
            format!(
                "  moved {} token file(s) into place, numbered on across the tasks in input order\n",
                report.renamed
            )
        } else {
            format!(
                "  renumbered {} shard(s) after planned shards whose samples were all left out\n",
                report.renamed
            )
        });
    }
    manifest_lines(&mut text, output, m);
    text
}
