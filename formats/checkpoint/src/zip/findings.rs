//! Findings of a torch zip file once it was read: CRC-32s, placeholders written by
//! `skip_data()`, storages against the tensors `data.pkl` declares, unsafe globals, byte
//! order, and the content scans of storages that carry no checksum.

use serde_json::json;
use shardsmith_manifest::{Finding, FindingKind, Inspection};

use crate::content::TensorScan;
use crate::content::in_hole;
use crate::report::{self, Settings};
use crate::torch::{Contents, Reader};

/// Findings of every archive of `z`; facts (tensor names, scalars) go into `inspection`.
pub(super) fn archive_findings(
    path: &str,
    settings: &Settings,
    views: &[ArchiveView<'_>],
    reader: Reader,
    inspection: &mut Inspection,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let nonempty: Vec<&MemberView<'_>> = views
        .iter()
        .flat_map(|a| &a.members)
        .filter(|m| m.size > 0)
        .collect();
    let no_crc = !nonempty.is_empty() && nonempty.iter().all(|m| m.crc == 0);
    if no_crc {
        out.push(Finding::warning(
            FindingKind::CrcNotRecorded,
            path,
            "no member has a CRC-32 (saved with torch.serialization.set_crc32_options(False)): byte damage cannot be detected without a manifest",
        ));
    }
    let mut placeholders = Vec::new();
    let mut names = Vec::new();
    for a in views {
        for m in &a.members {
            member_findings(path, settings, a, m, no_crc, &mut placeholders, &mut out);
        }
        storage_findings(path, a, reader, &mut out);
        if let Some(c) = a.contents {
            names.extend(c.names.iter().cloned());
            for (k, v) in &c.facts {
                inspection.facts.insert(k.clone(), v.clone());
            }
        }
    }
    if !placeholders.is_empty() {
        out.push(Finding::warning(
            FindingKind::PlaceholderData,
            path,
            format!(
                "{} storage record(s) ({}) have CRC 0 and hold only zeros: written by torch.serialization.skip_data(), the tensor values were never saved",
                placeholders.len(),
                placeholders.join(", ")
            ),
        ));
    }
    inspection.facts.insert("tensors".into(), json!(names));
    inspection
        .facts
        .insert("archives".into(), json!(views.len()));
    out
}

/// The findings of member `m` of archive `a` once read: a CRC-32 that differs, a
/// placeholder of `skip_data()` (named into `placeholders`), zero runs where no CRC-32
/// was recorded (`no_crc`: none was, in the whole file), and its values.
fn member_findings(
    path: &str,
    settings: &Settings,
    a: &ArchiveView<'_>,
    m: &MemberView<'_>,
    no_crc: bool,
    placeholders: &mut Vec<String>,
    out: &mut Vec<Finding>,
) {
    let Some((start, end, crc, scan)) = m.seen else {
        return;
    };
    let what = describe(a, m);
    if m.crc != 0 && crc != m.crc {
        let mut finding = Finding::error(
            FindingKind::CrcMismatch,
            path,
            format!(
                "{what}: CRC-32 differs from the central directory: its bytes changed after the save (torch.load does not check and loads them silently){}",
                zero_note(scan, &settings.holes)
            ),
        )
        .values(format!("{:08x}", m.crc), format!("{crc:08x}"));
        finding = match scan.and_then(|s| s.zeros.runs.first()) {
            Some(&(s, e)) => finding.range(s, e),
            None => finding.range(start, end),
        };
        out.push(finding);
    } else if m.crc == 0 && m.size > 0 && !no_crc && scan.is_some_and(|s| s.zeros.all_zero()) {
        // The CRC-32 of no bytes is 0: an empty storage (a tensor of no
        // element, an empty DCP shard) is saved, not a placeholder.
        placeholders.push(m.name.to_string());
    } else if m.crc == 0
        && let Some(scan) = scan
        && scan.suspicious_zeros()
        && let Some(&(s, e)) = scan.zeros.runs.first()
    {
        out.push(report::zero_finding(
            path,
            &what,
            scan,
            &settings.holes,
            s,
            e,
        ));
    }
    if let Some(scan) = scan {
        let mut values_only = scan.clone();
        values_only.zeros = Default::default();
        report::content_findings(out, path, &what, &values_only, &[]);
    }
}

/// A member as findings name it: its storage's tensor and dtype when `data.pkl` says
/// them; in a DCP item (whose tensor is the pickle's root), the item's name.
fn describe(a: &ArchiveView<'_>, m: &MemberView<'_>) -> String {
    let storage = m
        .storage
        .and_then(|k| a.contents.and_then(|c| c.storages.get(k)));
    let tensor = |s: &crate::torch::Storage| match a.label {
        Some(label) => label.to_string(),
        None => format!("tensor `{}`", s.tensors.first().map_or("?", String::as_str)),
    };
    match (storage, a.label) {
        (Some(s), _) => format!(
            "member `{}` (storage of {}{})",
            m.name,
            tensor(s),
            s.dtype.map(|d| format!(", {d:?}")).unwrap_or_default()
        ),
        (None, Some(label)) => format!("member `{}` (of {label})", m.name),
        (None, None) => format!("member `{}`", m.name),
    }
}

fn zero_note(scan: Option<&TensorScan>, holes: &[(u64, u64)]) -> String {
    let Some(scan) = scan else {
        return String::new();
    };
    let Some(&(s, e)) = scan.zeros.runs.first() else {
        return String::new();
    };
    if scan.zeros.all_zero() {
        return String::new();
    }
    let what = if in_hole(holes, s, e) {
        "a filesystem hole"
    } else {
        "zero bytes"
    };
    format!("; bytes {s}..{e} are {what}, the range shown")
}

fn storage_findings(path: &str, a: &ArchiveView<'_>, reader: Reader, out: &mut Vec<Finding>) {
    if let Some((at, reason)) = a.pickle_error {
        out.push(
            Finding::error(
                FindingKind::BadPickle,
                path,
                format!("data.pkl cannot be read: {reason}; tensors were not listed"),
            )
            .at(*at),
        );
    }
    if !a.pickle_seen && a.pickle_error.is_none() {
        out.push(Finding::warning(
            FindingKind::BadPickle,
            path,
            "the archive has no data.pkl: not a torch.save checkpoint, its tensors were not listed",
        ));
    }
    if a.byteorder.is_some_and(|b| b.starts_with(b"big")) {
        out.push(Finding::warning(
            FindingKind::ForeignByteOrder,
            path,
            "saved on a big-endian machine: torch byte-swaps on load; other readers must too",
        ));
    }
    let Some(c) = a.contents else {
        return;
    };
    report::global_findings(out, path, "data.pkl", c, reader);
    for (key, s) in &c.storages {
        let first = s.tensors.first().map_or("?", String::as_str);
        let member = a.members.iter().find(|m| m.storage == Some(key.as_str()));
        match member {
            None => out.push(Finding::error(
                FindingKind::BadTensor,
                path,
                format!("tensor `{first}` uses storage `{key}`, but the archive has no record data/{key}"),
            )),
            Some(m) => {
                if let Some(bytes) = s.bytes
                    && bytes != m.size
                {
                    let mut f = Finding::error(
                        FindingKind::BadTensor,
                        path,
                        format!(
                            "record `{}` holds {} bytes but tensor `{first}` declares a storage of {bytes} bytes",
                            m.name, m.size
                        ),
                    )
                    .values(bytes, m.size);
                    if let Some((start, end, ..)) = m.seen {
                        f = f.range(start, end);
                    }
                    out.push(f);
                }
            }
        }
    }
    report::view_findings(out, path, c);
    for m in &a.members {
        if let Some(key) = m.storage
            && !c.storages.contains_key(key)
        {
            out.push(Finding::warning(
                FindingKind::BadTensor,
                path,
                format!("record `{}` is not used by any tensor of data.pkl", m.name),
            ));
        }
    }
}

/// One archive as the checks see it.
pub(super) struct ArchiveView<'a> {
    /// What the archive is, when findings should name it so (a DCP item).
    pub label: Option<&'a str>,
    pub contents: Option<&'a Contents>,
    pub pickle_error: Option<&'a (u64, String)>,
    pub pickle_seen: bool,
    pub byteorder: Option<&'a [u8]>,
    pub members: Vec<MemberView<'a>>,
}

/// One member as the checks see it.
pub(super) struct MemberView<'a> {
    pub name: &'a str,
    pub storage: Option<&'a str>,
    pub size: u64,
    pub crc: u32,
    /// Data range read, CRC computed, content scan (absent when never read).
    pub seen: Option<(u64, u64, u32, Option<&'a TensorScan>)>,
}
