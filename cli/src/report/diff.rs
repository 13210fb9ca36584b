//! `diff --json`.

use schemars::JsonSchema;
use serde::Serialize;
use shardsmith_checkpoint::tensors::Entry;
use shardsmith_checkpoint::tensors::ValueDiff;
use shardsmith_checkpoint::tensors::diff::{Change, Changed, EntryReport, TensorInfo};

/// A tensor as `diff --json` names it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffTensor {
    /// dtype, safetensors spelling (`F32`, `BF16`).
    pub dtype: String,
    /// The file holding it (the `.metadata` of a DCP checkpoint).
    pub file: String,
    /// Name on its side.
    pub name: String,
    /// Shape.
    pub shape: Vec<u64>,
}

impl From<&TensorInfo> for DiffTensor {
    fn from(t: &TensorInfo) -> Self {
        Self {
            dtype: t.dtype.clone(),
            file: t.file.clone(),
            name: t.name.clone(),
            shape: t.shape.clone(),
        }
    }
}

/// How the values of a changed tensor differ (`--values`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffValues {
    /// Differing elements equal as numbers: other NaN payloads, +0 against -0.
    pub bit_only: u64,
    /// Elements that differ.
    pub differing: u64,
    /// Elements compared.
    pub elements: u64,
    /// Row-major index of the first differing element, or null.
    pub first_index: Option<u64>,
    /// Largest |a - b| where both are finite (null when compared as bit patterns: fp8).
    pub max_abs: Option<f64>,
    /// Largest |a - b| / max(|a|, |b|) where both are finite (null as for max_abs).
    pub max_rel: Option<f64>,
    /// Differing elements where one side is NaN or infinite.
    pub non_finite: u64,
}

impl From<&ValueDiff> for DiffValues {
    fn from(v: &ValueDiff) -> Self {
        Self {
            bit_only: v.bit_only,
            differing: v.differing,
            elements: v.elements,
            first_index: v.first,
            max_abs: v.by_value.then_some(v.max_abs),
            max_rel: v.by_value.then_some(v.max_rel),
            non_finite: v.non_finite,
        }
    }
}

/// A pair of tensors that differ.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffChange {
    /// A's tensor.
    pub a: DiffTensor,
    /// B's tensor.
    pub b: DiffTensor,
    /// `dtype`, `shape` or `data`.
    pub change: &'static str,
    /// With --values, how the values differ (null otherwise, or when not comparable).
    pub values: Option<DiffValues>,
}

impl From<&Changed> for DiffChange {
    fn from(c: &Changed) -> Self {
        let (change, values) = match &c.change {
            Change::Dtype(v) => ("dtype", v.as_ref()),
            Change::Shape => ("shape", None),
            Change::Data(v) => ("data", v.as_ref()),
        };
        Self {
            a: (&c.a).into(),
            b: (&c.b).into(),
            change,
            values: values.map(Into::into),
        }
    }
}

/// A value beside the tensors (not a tensor) as `diff --json` names it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffEntry {
    /// A's value, Python-like and short, or null when only B has it.
    pub a: Option<String>,
    /// B's value, or null when only A has it.
    pub b: Option<String>,
    /// Name (after `--map` on A's side).
    pub name: String,
}

impl DiffEntry {
    fn of(a: Option<&Entry>, b: Option<&Entry>) -> Self {
        Self {
            a: a.map(|e| e.shown.clone()),
            b: b.map(|e| e.shown.clone()),
            name: a.or(b).map(|e| e.name.clone()).unwrap_or_default(),
        }
    }
}

/// How the values beside the tensors compare (they do not decide `identical`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffEntries {
    /// Values under the same name that differ.
    pub changed: Vec<DiffEntry>,
    /// Values not compared: only one side has them, or a side's value is not known in
    /// full (a long bytes value, an object of a class).
    pub not_compared: Vec<DiffEntry>,
    /// Values equal on both sides.
    pub same: u64,
}

impl From<&EntryReport> for DiffEntries {
    fn from(r: &EntryReport) -> Self {
        let mut not_compared: Vec<DiffEntry> = r
            .only_a
            .iter()
            .map(|e| DiffEntry::of(Some(e), None))
            .chain(r.only_b.iter().map(|e| DiffEntry::of(None, Some(e))))
            .chain(
                r.not_compared
                    .iter()
                    .map(|(a, b)| DiffEntry::of(Some(a), Some(b))),
            )
            .collect();
        not_compared.sort_by(|x, y| x.name.cmp(&y.name));
        Self {
            changed: r
                .changed
                .iter()
                .map(|(a, b)| DiffEntry::of(Some(a), Some(b)))
                .collect(),
            not_compared,
            same: r.same,
        }
    }
}

/// What `diff --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diff {
    /// The first checkpoint, as given.
    pub a: String,
    /// The second checkpoint, as given.
    pub b: String,
    /// Bytes read from each side's tensors (canonical form).
    pub bytes: u64,
    /// Pairs that differ.
    pub changed: Vec<DiffChange>,
    /// Always `diff`.
    pub command: &'static str,
    /// The values beside the tensors that are not tensors (a step count, a learning
    /// rate), compared by name.
    pub entries: DiffEntries,
    /// True when both hold the same tensors with the same data (exit 0).
    pub identical: bool,
    /// Tensors only A has.
    pub only_a: Vec<DiffTensor>,
    /// Tensors only B has.
    pub only_b: Vec<DiffTensor>,
    /// Tensors identical on both sides.
    pub same: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The version of shardsmith.
    pub version: &'static str,
}
