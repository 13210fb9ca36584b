//! `verify` for token files, streaming during the same read that hashes each file:
//!
//! - Megatron `.idx`: header (magic, version, dtype code), size equal to what its counts
//!   say, pointers that are the running sum of the lengths, document boundaries that
//!   start at 0, never decrease and end at the sequence count.
//! - Megatron `.bin`: its size equal to what the `.idx` says (dataset-level check); every
//!   id below the vocabulary size; every sequence ending with the end-of-document token
//!   when the run added one (the sequence lengths are streamed from the `.idx` as the
//!   `.bin` is read); the counts the manifest records.
//! - nanoGPT: whole tokens, ids below the vocabulary, one end-of-document token per
//!   document recorded.
//! - llm.c: a known magic and version, a positive count equal to the file size.
//!
//! The vocabulary size, end-of-document id and dtype come from the manifest's options.

use std::collections::BTreeMap;

use serde_json::Value;
use shardsmith_manifest::{FileContext, Finding, FindingKind, Inspection, Inspector, Manifest};

mod bin;
mod header;
mod idx;

use self::bin::BinInspector;
use self::header::{Options, idx_header, llmc_magic};
use self::idx::IdxInspector;
use super::write::{IDX_MAGIC, LLMC_HEADER, TokenDtype, TokenFormat};

/// The inspector for a token file, if `ctx` and `head` say it is one.
pub fn inspector_for(ctx: &FileContext<'_>, head: &[u8]) -> Option<Box<dyn Inspector>> {
    let recorded = ctx
        .entry
        .and_then(|e| e.format.as_deref())
        .and_then(TokenFormat::from_name);
    let opts = Options::from(ctx.manifest);
    let entry = ctx.entry.cloned();
    let path = ctx.path.to_string();
    let is_idx = path.ends_with(".idx");
    let is_bin = path.ends_with(".bin");
    match recorded {
        Some(TokenFormat::Megatron) if is_idx => Some(Box::new(IdxInspector::new(path))),
        Some(TokenFormat::Megatron) => Some(Box::new(BinInspector::megatron(
            ctx.root, path, entry, opts,
        ))),
        Some(TokenFormat::Nanogpt) => {
            let dtype = opts.dtype.unwrap_or(TokenDtype::Uint16);
            Some(Box::new(BinInspector::raw(
                TokenFormat::Nanogpt,
                path,
                dtype,
                0,
                entry,
                opts,
            )))
        }
        Some(TokenFormat::Llmc) => Some(Box::new(BinInspector::raw(
            TokenFormat::Llmc,
            path,
            TokenDtype::Uint16,
            LLMC_HEADER,
            entry,
            opts,
        ))),
        None if is_idx && head.starts_with(IDX_MAGIC) => Some(Box::new(IdxInspector::new(path))),
        None if is_bin && idx_header(ctx.root, &path).is_some() => Some(Box::new(
            BinInspector::megatron(ctx.root, path, entry, opts),
        )),
        None if is_bin && llmc_magic(head).is_some() => Some(Box::new(BinInspector::raw(
            TokenFormat::Llmc,
            path,
            TokenDtype::Uint16,
            LLMC_HEADER,
            entry,
            opts,
        ))),
        None => None,
    }
}

/// Dataset-level checks: every Megatron `.idx` has its `.bin`, of the size it says.
pub fn check_layout(
    files: &BTreeMap<String, u64>,
    inspections: &BTreeMap<String, Inspection>,
    manifest: Option<&Manifest>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (path, inspection) in inspections {
        if inspection.format != "megatron" || !path.ends_with(".idx") {
            continue;
        }
        let Some(expected) = inspection.facts.get("bin_bytes").and_then(Value::as_u64) else {
            continue;
        };
        let bin = format!("{}.bin", path.trim_end_matches(".idx"));
        match files.get(&bin) {
            Some(&size) if size != expected => {
                let (kind, message) = if size < expected {
                    (
                        FindingKind::Truncated,
                        format!("shorter than its index `{path}` says"),
                    )
                } else {
                    (
                        FindingKind::TrailingData,
                        format!("longer than its index `{path}` says"),
                    )
                };
                findings.push(
                    Finding::error(kind, &bin, message)
                        .at(size.min(expected))
                        .values(expected, size),
                );
            }
            Some(_) => {}
            None => {
                let listed = manifest.is_some_and(|m| m.files.iter().any(|f| f.path == bin));
                if !listed {
                    findings.push(Finding::error(
                        FindingKind::MissingFile,
                        &bin,
                        format!("the token file of index `{path}` is not present"),
                    ));
                }
            }
        }
    }
    findings
}
