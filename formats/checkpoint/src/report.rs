//! What every checkpoint inspector is told about its file, and how content scans
//! become findings.

use shardsmith_manifest::{Finding, FindingKind};

use super::content::{TensorScan, in_hole};
use super::torch::{Contents, Fault, Reader};

/// Per-file facts an inspector gets from the factory (known before the read starts).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// File size when the read started.
    pub size: u64,
    /// Count NaN/Inf in float tensors (`--scan-values`).
    pub scan_values: bool,
    /// Filesystem holes of the file (absolute byte ranges).
    pub holes: Vec<(u64, u64)>,
}

/// Findings of one tensor's content scan: zero runs (or holes) in float data that is not
/// zero everywhere, NaN and Inf counts. `what` names the tensor (`tensor `w` (F32 [128,
/// 64])`).
pub fn content_findings(
    out: &mut Vec<Finding>,
    path: &str,
    what: &str,
    scan: &TensorScan,
    holes: &[(u64, u64)],
) {
    if scan.suspicious_zeros()
        && let Some(&(start, end)) = scan.zeros.runs.first()
    {
        out.push(zero_finding(path, what, scan, holes, start, end));
    }
    if let Some(values) = &scan.values {
        if values.nan > 0 {
            out.push(
                Finding::error(
                    FindingKind::NanValues,
                    path,
                    format!(
                        "{what} holds {} NaN of {} values: training resumed from it produces NaN loss",
                        values.nan, values.count
                    ),
                )
                .values(0, values.nan),
            );
        }
        if values.inf > 0 {
            out.push(
                Finding::warning(
                    FindingKind::InfValues,
                    path,
                    format!(
                        "{what} holds {} ±Inf of {} values (legitimate only in masks and the like)",
                        values.inf, values.count
                    ),
                )
                .values(0, values.inf),
            );
        }
    }
}

/// The zero-run (or hole) finding of a tensor scan, as [`TensorScan::zero_judgement`]
/// judges it: an error when the run cannot be legitimate data (mid-row in a tensor with
/// no other zero element, or whole file blocks mid-row), a warning otherwise. The run
/// shown is the judged one; `start..end` (the first run) when there is no judgement.
pub fn zero_finding(
    path: &str,
    what: &str,
    scan: &TensorScan,
    holes: &[(u64, u64)],
    start: u64,
    end: u64,
) -> Finding {
    let (start, end, error, why) = match scan.zero_judgement() {
        Some(j) => (j.start, j.end, j.error, j.why),
        None => (
            start,
            end,
            false,
            "whose other bytes are not zero: the mark of data lost by the storage (or a legitimately zero row)".to_string(),
        ),
    };
    let more = if scan.zeros.count > 1 {
        format!(
            "; {} such runs in the tensor, {} bytes in all",
            scan.zeros.count, scan.zeros.bytes
        )
    } else {
        String::new()
    };
    let len = end - start;
    let (kind, what_it_is) = if in_hole(holes, start, end) {
        (
            FindingKind::Hole,
            format!("{len} bytes of filesystem hole (never written, read back as zeros)"),
        )
    } else {
        (FindingKind::ZeroRun, format!("{len} zero bytes"))
    };
    let message = format!("{what_it_is} inside {what} {why}{more}");
    let finding = if error {
        Finding::error(kind, path, message)
    } else {
        Finding::warning(kind, path, message)
    };
    finding.range(start, end)
}

/// Findings about the globals a pickle imports and the opcodes it uses (`what`:
/// `data.pkl`, `the pickle`), judged against `reader`: what `torch.load(weights_only=True)`
/// refuses is a warning for a torch file, what would run code an error for every file.
pub fn global_findings(
    out: &mut Vec<Finding>,
    path: &str,
    what: &str,
    c: &Contents,
    reader: Reader,
) {
    if !c.unsafe_globals.is_empty() {
        out.push(Finding::error(
            FindingKind::UnsafePickle,
            path,
            format!(
                "{what} imports {}: loading it with pickle or torch.load(weights_only=False) would run that code; it was read here without executing it",
                quoted(&c.unsafe_globals)
            ),
        ));
    }
    match reader {
        Reader::WeightsOnly => {
            let refused: Vec<String> = c.inert.iter().chain(&c.framework).cloned().collect();
            if !refused.is_empty() {
                let packages = match c.framework.is_empty() {
                    true => "",
                    false => " and the packages that define them",
                };
                out.push(Finding::warning(
                    FindingKind::UnsafePickle,
                    path,
                    format!(
                        "{what} imports {}, which torch.load(weights_only=True), the default since torch 2.6, refuses: loading needs weights_only=False{packages}",
                        quoted(&refused)
                    ),
                ));
            }
            if let Some((at, op)) = c.weights_only_refuses {
                out.push(Finding::warning(
                    FindingKind::UnsafePickle,
                    path,
                    format!(
                        "{what} uses the pickle opcode {} (0x{op:02x}) at pickle offset {at}, which torch.load(weights_only=True), the default since torch 2.6, refuses (\"Unsupported operand {op}\"; it reads the protocol-2 opcodes torch.save writes by default): loading needs weights_only=False",
                        crate::pickle::opcode_name(op)
                    ),
                ));
            }
        }
        Reader::Pickle => {
            if !c.framework.is_empty() {
                out.push(Finding::warning(
                    FindingKind::UnsafePickle,
                    path,
                    format!(
                        "{what} imports {}, which torch.load(weights_only=True) refuses: loading needs weights_only=False and those packages",
                        quoted(&c.framework)
                    ),
                ));
            }
        }
    }
}

/// Findings of the tensors' views of their storages, as `ls` and `diff` judge them
/// ([`Fault`]): a view past its storage or one torch cannot build is an error, an
/// element type shardsmith does not know a warning (not checked); storages declared
/// with two sizes; tensor names left out past the walk's budget.
pub fn view_findings(out: &mut Vec<Finding>, path: &str, c: &Contents) {
    for v in &c.views {
        let Some(fault) = &v.fault else { continue };
        let message = fault.message(&v.name, &v.storage);
        out.push(match fault {
            Fault::UnknownDtype(_) => {
                Finding::warning(FindingKind::UnsupportedDtype, path, message)
            }
            Fault::Geometry(_) | Fault::Overrun { .. } => {
                Finding::error(FindingKind::BadTensor, path, message)
            }
        });
    }
    if let Some((name, func)) = c.other_tensors.first() {
        let more = match c.other_tensors.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        out.push(Finding::warning(
            FindingKind::UnsupportedDtype,
            path,
            format!(
                "tensor `{name}`{more} (`{func}`: quantized, sparse or another layout) is not a plain strided view: its storage was not checked against it, and ls and diff do not read it"
            ),
        ));
    }
    for key in &c.conflicts {
        out.push(Finding::error(
            FindingKind::BadTensor,
            path,
            format!("storage `{key}` is declared with different sizes by different tensors"),
        ));
    }
    if c.names_truncated {
        out.push(Finding::warning(
            FindingKind::BadPickle,
            path,
            "the pickle reaches its values by more paths than this reader follows (shared containers nested many times): names past that were not listed or checked",
        ));
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
