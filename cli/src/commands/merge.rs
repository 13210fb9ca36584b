//! `shardsmith merge OUTPUT [PART...]`.

use anyhow::Result;
use shardsmith_pack::merge::merge;

use super::Status;
use crate::args::MergeArgs;
use crate::output::Printer;
use crate::output::refuse;
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &MergeArgs, printer: &Printer) -> Result<Status> {
    if let shardsmith_store::Location::Local(path) = crate::storage::location(&args.output)? {
        crate::output::need_directory(&path)?;
    }
    if args.parts.is_empty()
        && let Some(status) = finish_tasks(args, printer)?
    {
        return Ok(status);
    }
    let report = match crate::storage::location(&args.output)? {
        shardsmith_store::Location::Remote(remote) => {
            let sink = shardsmith_store::ObjectDir::new(remote.clone());
            let names = if args.parts.is_empty() {
                shardsmith_pack::merge::parts_in(&sink)?
            } else {
                let base = format!("{}/", remote.url(""));
                args.parts
                    .iter()
                    .map(|p| {
                        let text = p.to_string_lossy();
                        let name = text.strip_prefix(&base).unwrap_or(&text);
                        if name.is_empty() || name.contains('/') {
                            refuse!(
                                Merge,
                                "part `{text}` must be a prefix directly inside `{}`",
                                remote.url("")
                            );
                        }
                        Ok(name.to_string())
                    })
                    .collect::<Result<Vec<_>>>()?
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
        shardsmith_store::Location::Local(_) => merge(&args.output, &args.parts)?,
    };
    let m = &report.manifest;
    let mut text = format!(
        "merged {} part(s) ({}) into {}: {} files, {}, {} samples\n",
        report.parts.len(),
        report.parts.join(", "),
        args.output.display(),
        m.totals.files,
        human_bytes(m.totals.bytes),
        m.totals.samples.unwrap_or(0)
    );
    if report.index {
        text.push_str(&format!(
            "  index     {}\n",
            args.output.join("index.json").display()
        ));
    }
    crate::output::manifest_lines(
        &mut text,
        &args
            .output
            .join(shardsmith_manifest::MANIFEST_FILE)
            .display()
            .to_string(),
        &m.root_sha256,
    );
    printer.summary(&text);
    printer.report(&report::Merge {
        bytes: m.totals.bytes,
        command: "merge",
        files: m.totals.files,
        index: report.index,
        output: args.output.display().to_string(),
        parts: &report.parts,
        root_sha256: &m.root_sha256,
        samples: m.totals.samples,
        tasks: 0,
        renamed: 0,
        version: report::VERSION,
    });
    Ok(Status::Clean)
}

/// The final step of a `pack` split into tasks, when OUTPUT holds one.
fn finish_tasks(args: &MergeArgs, printer: &Printer) -> Result<Option<Status>> {
    let remote;
    let local;
    let sink: &dyn shardsmith_store::OutputSink = match crate::storage::location(&args.output)? {
        shardsmith_store::Location::Remote(r) => {
            remote = shardsmith_store::ObjectDir::new(r);
            &remote
        }
        shardsmith_store::Location::Local(path) => {
            if !path.is_dir() {
                return Ok(None);
            }
            local = shardsmith_store::LocalDir::create(&path)?;
            &local
        }
    };
    let split = shardsmith_store::tasks::split_run(sink)?;
    if split.is_none() {
        // A finished run (split or not: their outputs are the same) has nothing to merge;
        // a finishing job run twice (a requeued Slurm job) is not an error.
        let finished = sink
            .read(shardsmith_manifest::MANIFEST_FILE)?
            .and_then(|bytes| {
                shardsmith_manifest::Manifest::parse(
                    &bytes,
                    shardsmith_manifest::MANIFEST_FILE.as_ref(),
                )
                .ok()
            })
            .map(|(m, _)| m)
            .filter(|m| {
                m.kind == shardsmith_manifest::ManifestKind::Pack
                    && m.input.is_some()
                    && m.files.iter().all(|f| !f.path.contains('/'))
            });
        let Some(m) = finished else {
            return Ok(None);
        };
        printer.summary(&format!(
            "already finished: {} holds one complete dataset ({} files, {} samples); nothing to merge\n",
            args.output.display(),
            m.totals.files,
            m.totals.samples.unwrap_or(0)
        ));
        printer.report(&report::Merge {
            bytes: m.totals.bytes,
            command: "merge",
            files: m.totals.files,
            index: m.files.iter().any(|f| f.path == "index.json"),
            output: args.output.display().to_string(),
            parts: &[],
            root_sha256: &m.root_sha256,
            samples: m.totals.samples,
            tasks: 0,
            renamed: 0,
            version: report::VERSION,
        });
        return Ok(Some(Status::Clean));
    }
    let report = match split.as_deref() {
        Some("tokenize") => shardsmith_tokens::task::finish(sink)?,
        _ => shardsmith_pack::task::finish(sink)?,
    };
    for warning in &report.warnings {
        printer.warn(warning);
    }
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
        args.output.display(),
        m.totals.files,
        human_bytes(m.totals.bytes),
    );
    if report.renamed > 0 {
        text.push_str(&match split.as_deref() {
            Some("tokenize") => format!(
                "  moved {} token file(s) into place, numbered on across the tasks in input order\n",
                report.renamed
            ),
            _ => format!(
                "  renumbered {} shard(s) after planned shards whose samples were all left out\n",
                report.renamed
            ),
        });
    }
    crate::output::manifest_lines(
        &mut text,
        &args
            .output
            .join(shardsmith_manifest::MANIFEST_FILE)
            .display()
            .to_string(),
        &m.root_sha256,
    );
    printer.summary(&text);
    printer.report(&report::Merge {
        bytes: m.totals.bytes,
        command: "merge",
        files: m.totals.files,
        index: m.files.iter().any(|f| f.path == "index.json"),
        output: args.output.display().to_string(),
        parts: &[],
        root_sha256: &m.root_sha256,
        samples: m.totals.samples,
        tasks: report.tasks,
        renamed: report.renamed,
        version: report::VERSION,
    });
    Ok(Some(Status::Clean))
}
