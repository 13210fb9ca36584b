//! What `tokenize` prints when it is done: the summary and the `--json` report.

use std::time::Duration;

use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_tokens::TokenizeReport;

use super::settings::Resolved;
use crate::commands::brace_pattern;
use crate::output::{duplicates_line, manifest_lines, resumed_line, seconds, skipped_lines};
use crate::report;
use crate::size::human_bytes;
use crate::storage::Output;

fn pattern(report: &TokenizeReport) -> String {
    let names: Vec<&str> = report
        .manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| p.ends_with(".bin"))
        .collect();
    brace_pattern(&names).unwrap_or_default()
}

fn eod_text(report: &TokenizeReport) -> String {
    let o = &report.manifest.options;
    let placement = match report.manifest.format.as_deref() {
        Some("llmc") => "prepended to",
        _ => "appended to",
    };
    match (o.get("eod_token").and_then(|v| v.as_str()), o.get("eod_id")) {
        (Some(token), Some(id)) => format!("{token} ({id}) {placement} every document"),
        _ => "no end-of-document token".into(),
    }
}

pub(super) fn summary(
    report: &TokenizeReport,
    resolved: &Resolved,
    output: &Output,
    elapsed: Duration,
) -> String {
    let m = &report.manifest;
    let documents = m.totals.documents.unwrap_or(0);
    let tokens = m.totals.tokens.unwrap_or(0);
    let mut out = String::new();
    if report.already_complete {
        out.push_str(&format!(
            "already complete: {} holds this dataset ({documents} documents, {tokens} tokens in {} files); nothing to do\n",
            output.show(""),
            m.files.len()
        ));
    } else {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let read = report.input_bytes_read;
        out.push_str(&format!(
            "tokenized {documents} documents ({}) into {tokens} tokens with {} in {} ({}/s, {})\n",
            human_bytes(m.input.as_ref().map_or(0, |i| i.bytes)),
            resolved.tokenizer.name(),
            seconds(elapsed),
            human_bytes((read as f64 / secs) as u64),
            token_rate(tokens as f64 / secs),
        ));
    }
    let dtype = m
        .options
        .get("dtype")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let idx = if m.format.as_deref() == Some("megatron") {
        " (+ .idx)"
    } else {
        ""
    };
    out.push_str(&format!(
        "  files     {}{idx}\n",
        output.show(&pattern(report))
    ));
    out.push_str(&format!(
        "  format    {}, {dtype}, {}\n",
        m.format.as_deref().unwrap_or(""),
        eod_text(report)
    ));
    manifest_lines(&mut out, &output.show(MANIFEST_FILE), &m.root_sha256);
    resumed_line(&mut out, report.shards_resumed, "file(s)");
    if let Some(total) = m.skipped_total {
        let heading = format!("{total} malformed record(s)");
        skipped_lines(&mut out, &heading, &m.skipped, total as usize, "");
    }
    if let Some(d) = &m.duplicates {
        out.push_str(&duplicates_line(d, "document"));
    }
    out
}

pub(super) fn json_report<'a>(
    report: &'a TokenizeReport,
    resolved: &'a Resolved,
    output: &Output,
    elapsed: Duration,
) -> report::Tokenize<'a> {
    let m = &report.manifest;
    report::Tokenize {
        already_complete: report.already_complete,
        command: "tokenize",
        documents: m.totals.documents,
        dtype: m.options.get("dtype"),
        eod_id: m.options.get("eod_id"),
        file_pattern: pattern(report),
        files: m.files.len(),
        format: m.format.as_deref(),
        input_bytes: m.input.as_ref().map(|i| i.bytes),
        input_bytes_read: report.input_bytes_read,
        input_files: m.input.as_ref().map(|i| i.files),
        manifest: MANIFEST_FILE,
        output: output.show(""),
        output_bytes: m.totals.bytes,
        root_sha256: &m.root_sha256,
        seconds: elapsed.as_secs_f64(),
        shards_resumed: report.shards_resumed,
        shards_written: report.shards_written,
        skipped: &m.skipped,
        skipped_total: m.skipped_total.unwrap_or(0),
        duplicates: m.duplicates.as_ref(),
        tokenizer: resolved.tokenizer.name(),
        tokens: m.totals.tokens,
        version: report::VERSION,
        vocab_size: resolved.tokenizer.vocab_size(),
    }
}

/// Tokens per second: in millions, or as a plain count when that would print 0.00.
fn token_rate(per_second: f64) -> String {
    if per_second >= 5e3 {
        format!("{:.2} M tokens/s", per_second / 1e6)
    } else {
        format!("{per_second:.0} tokens/s")
    }
}
