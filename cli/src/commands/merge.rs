//! `shardsmith merge OUTPUT [PART...]`.

use anyhow::Result;
use shardsmith_pack::merge::merge;

use super::Status;
use crate::args::MergeArgs;
use crate::output::Printer;
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &MergeArgs, printer: &Printer) -> Result<Status> {
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
                            anyhow::bail!(
                                "part `{text}` must be a prefix directly inside `{}`",
                                remote.url("")
                            );
                        }
                        Ok(name.to_string())
                    })
                    .collect::<Result<Vec<_>>>()?
            };
            if names.is_empty() {
                anyhow::bail!(
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
        version: report::VERSION,
    });
    Ok(Status::Clean)
}
