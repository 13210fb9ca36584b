//! `shardsmith merge OUTPUT [PART...]`.

use anyhow::Result;
use shardsmith_pack::merge::merge;

use super::Status;
use crate::args::MergeArgs;
use crate::output::Printer;
use crate::report;
use crate::size::human_bytes;

pub fn run(args: &MergeArgs, printer: &Printer) -> Result<Status> {
    let report = merge(&args.output, &args.parts)?;
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
