//! `shardsmith merge OUTPUT [PART...]`.

use anyhow::Result;
use serde_json::json;
use shardsmith_pack::merge::merge;

use super::Status;
use crate::args::MergeArgs;
use crate::output::Printer;
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
        &args.output.join(shardsmith_manifest::MANIFEST_FILE),
        &m.root_sha256,
    );
    printer.summary(&text);
    printer.report(&json!({
        "version": env!("CARGO_PKG_VERSION"),
        "command": "merge",
        "output": args.output.display().to_string(),
        "parts": report.parts,
        "index": report.index,
        "files": m.totals.files,
        "bytes": m.totals.bytes,
        "samples": m.totals.samples,
        "root_sha256": m.root_sha256,
    }));
    Ok(Status::Clean)
}
