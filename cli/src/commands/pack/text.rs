//! What `pack` prints when it is done: the summary and the `--json` report.

use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_pack::PackReport;

use crate::commands::brace_pattern;
use crate::output::{duplicates_line, manifest_lines, resumed_line, seconds, skipped_lines};
use crate::report;
use crate::size::human_bytes;
use crate::storage::Output;

fn shards(report: &PackReport) -> impl Iterator<Item = &shardsmith_manifest::FileEntry> {
    report.manifest.files.iter().filter(|f| f.format.is_some())
}

fn pattern(report: &PackReport) -> String {
    let names: Vec<&str> = shards(report).map(|f| f.path.as_str()).collect();
    brace_pattern(&names).unwrap_or_default()
}

pub(super) fn summary(
    report: &PackReport,
    output: &Output,
    elapsed: std::time::Duration,
) -> String {
    let m = &report.manifest;
    let input = m
        .input
        .clone()
        .unwrap_or_else(|| shardsmith_manifest::InputSummary {
            files: 0,
            bytes: 0,
            listing_sha256: String::new(),
        });
    let mut out = String::new();
    if let Some(task) = &report.task {
        let (mine, all) = task.bytes;
        out.push_str(&format!(
            "task {} of {}: planned shards {}..{} of {} ({} of {}): {} written{} in {}\n",
            task.task.index,
            task.task.count,
            task.plans.start,
            task.plans.end,
            task.total_plans,
            human_bytes(mine),
            human_bytes(all),
            report.shards_written,
            if report.shards_resumed > 0 {
                format!(
                    ", {} kept from an interrupted attempt",
                    report.shards_resumed
                )
            } else {
                String::new()
            },
            seconds(elapsed),
        ));
        out.push_str(&format!(
            "  then, once every task has finished: shardsmith merge {}\n",
            output.show("")
        ));
        return out;
    }
    if report.already_complete {
        out.push_str(&format!(
            "already complete: {} holds this dataset ({} samples in {} shards); nothing to do\n",
            output.show(""),
            m.totals.samples.unwrap_or(0),
            shards(report).count()
        ));
    } else {
        let rate = input.bytes as f64 / elapsed.as_secs_f64().max(1e-9);
        out.push_str(&format!(
            "packed {} samples ({} files, {}) into {} {} shards ({}) in {} ({}/s)\n",
            m.totals.samples.unwrap_or(0),
            input.files,
            human_bytes(input.bytes),
            shards(report).count(),
            m.format.as_deref().unwrap_or(""),
            human_bytes(m.totals.bytes),
            seconds(elapsed),
            human_bytes(rate as u64),
        ));
    }
    out.push_str(&format!("  shards    {}\n", output.show(&pattern(report))));
    manifest_lines(&mut out, &output.show(MANIFEST_FILE), &m.root_sha256);
    resumed_line(&mut out, report.shards_resumed, "shard(s)");
    if !m.skipped.is_empty() {
        let heading = format!("{} input file(s)", m.skipped.len());
        skipped_lines(
            &mut out,
            &heading,
            &m.skipped,
            m.skipped.len(),
            " in the manifest",
        );
    }
    if let Some(d) = &m.duplicates {
        out.push_str(&duplicates_line(d, "sample"));
    }
    out
}

pub(super) fn json_report<'a>(
    report: &'a PackReport,
    output: &Output,
    elapsed: std::time::Duration,
) -> report::Pack<'a> {
    let m = &report.manifest;
    report::Pack {
        already_complete: report.already_complete,
        command: "pack",
        format: m.format.as_deref(),
        input_bytes: m.input.as_ref().map(|i| i.bytes),
        input_files: m.input.as_ref().map(|i| i.files),
        manifest: MANIFEST_FILE,
        output: output.show(""),
        output_bytes: m.totals.bytes,
        root_sha256: &m.root_sha256,
        samples: m.totals.samples,
        seconds: elapsed.as_secs_f64(),
        shard_pattern: pattern(report),
        shards: shards(report).count(),
        shards_resumed: report.shards_resumed,
        shards_written: report.shards_written,
        skipped: &m.skipped,
        duplicates: m.duplicates.as_ref(),
        task: report.task.as_ref().map(|t| report::PackTask {
            count: t.task.count,
            index: t.task.index,
            plans: [t.plans.start, t.plans.end],
            source: &t.task.source,
            total_plans: t.total_plans,
        }),
        version: report::VERSION,
        warnings: &report.warnings,
    }
}
