//! The run's pointer files (`latest`, `latest_universal`, Megatron's
//! `latest_checkpointed_iteration.txt`, a `latest` symbolic link): parsed, then checked
//! against the checkpoints they name.

use shardsmith_manifest::{Finding, FindingKind};

use super::report::AuditReport;

/// Names of the pointer files trainers write beside their checkpoints.
pub(super) const POINTER_FILES: [&str; 3] = [
    "latest",
    "latest_universal",
    "latest_checkpointed_iteration.txt",
];

/// Larger than this, a file is not a pointer.
pub(super) const MAX_POINTER: u64 = 4096;

/// A pointer file and the checkpoint it names.
pub(super) struct Pointer {
    pub(super) name: String,
    pub(super) target: Option<String>,
    pub(super) problem: Option<String>,
}

/// Parses pointer file `name` of `size` bytes, read by `read` (not called when the
/// file is too large to be a pointer).
pub(super) fn parse_pointer(
    name: &str,
    size: u64,
    read: &dyn Fn() -> std::io::Result<Vec<u8>>,
) -> Pointer {
    let read = if size <= MAX_POINTER {
        read()
    } else {
        Ok(Vec::new())
    };
    let text = match read {
        Ok(bytes) if size <= MAX_POINTER && bytes.len() as u64 <= MAX_POINTER => {
            String::from_utf8_lossy(&bytes).trim().to_string()
        }
        Ok(_) => {
            return Pointer {
                name: name.into(),
                target: None,
                problem: Some("pointer file is larger than 4 KiB: not a pointer".into()),
            };
        }
        Err(e) => {
            return Pointer {
                name: name.into(),
                target: None,
                problem: Some(format!("cannot be read: {e}")),
            };
        }
    };
    if name == "latest_checkpointed_iteration.txt" {
        return match text.parse::<u64>() {
            Ok(n) => Pointer {
                name: name.into(),
                target: Some(format!("iter_{n:07}")),
                problem: None,
            },
            Err(_) if text == "release" => Pointer {
                name: name.into(),
                target: Some("release".into()),
                problem: None,
            },
            Err(_) => Pointer {
                name: name.into(),
                target: None,
                problem: Some(format!(
                    "holds {text:?}, neither an iteration number nor `release`"
                )),
            },
        };
    }
    if text.is_empty() || text.contains(['/', '\n']) {
        return Pointer {
            name: name.into(),
            target: None,
            problem: Some(format!("holds {text:?}, not a checkpoint tag")),
        };
    }
    Pointer {
        name: name.into(),
        target: Some(text),
        problem: None,
    }
}

/// Checks a pointer against the surveyed checkpoints.
pub(super) fn pointer_findings(p: &Pointer, report: &mut AuditReport) {
    if let Some(problem) = &p.problem {
        report.findings.push(Finding::error(
            FindingKind::BadPointer,
            &p.name,
            problem.clone(),
        ));
        return;
    }
    let Some(target) = &p.target else { return };
    let resume = match &report.newest_intact {
        Some(n) => format!("; the newest intact checkpoint is `{n}`"),
        None => "; no checkpoint of the run is intact".into(),
    };
    match report.checkpoints.iter().position(|c| &c.name == target) {
        None => report.findings.push(
            Finding::error(
                FindingKind::BadPointer,
                &p.name,
                format!("points at `{target}`, which does not exist: a resume would fail{resume}"),
            )
            .values(target, "nothing"),
        ),
        Some(i) if !report.checkpoints[i].intact => report.findings.push(Finding::error(
            FindingKind::BadPointer,
            &p.name,
            format!(
                "points at `{target}`, which is broken ({} error(s)): a resume would load damaged data{resume}",
                report.checkpoints[i].errors
            ),
        )),
        Some(i) => {
            let newer = report.checkpoints[i + 1..].iter().rev().find(|c| c.intact);
            if let Some(newer) = newer {
                report.findings.push(Finding::warning(
                    FindingKind::BadPointer,
                    &p.name,
                    format!(
                        "points at `{target}`, but `{}` is newer and intact: a resume would lose progress",
                        newer.name
                    ),
                ));
            }
        }
    }
}

/// Names the newest and the newest intact checkpoint of `report.checkpoints` (oldest
/// first) and checks `pointers` against them.
pub(super) fn finish(mut report: AuditReport, pointers: &[Pointer]) -> AuditReport {
    report.newest = report.checkpoints.last().map(|c| c.name.clone());
    report.newest_intact = report
        .checkpoints
        .iter()
        .rev()
        .find(|c| c.intact)
        .map(|c| c.name.clone());
    for p in pointers {
        pointer_findings(p, &mut report);
    }
    report
}
