//! `diff`: two checkpoints compared tensor by tensor from their bytes, whatever their
//! containers. Names are matched (after the `--map` rules rename the first side's),
//! then each pair's canonical forms are streamed side by side: equal bytes, equal
//! weights. Pairs are compared in parallel; each holds two blocks of memory.

use std::io::Read;

use rayon::prelude::*;

use super::canon::{BLOCK, read_error};
use super::model::{Entry, Tensor};
use super::rules::MapRules;
use super::values::{Compare, ValueDiff};
use crate::Error;

/// What `diff` is asked for.
#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    /// Count differing elements and the largest differences (else stop at the first
    /// differing byte).
    pub values: bool,
    /// Renames applied to the first side's names.
    pub map: MapRules,
}

/// A tensor as the report names it.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// Name on its side.
    pub name: String,
    /// dtype, safetensors spelling.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// The file it is in.
    pub file: String,
}

impl TensorInfo {
    fn of(t: &Tensor) -> Self {
        Self {
            name: t.name.clone(),
            dtype: t.dtype_name(),
            shape: t.shape.clone(),
            file: t.file.clone(),
        }
    }
}

/// How a pair of same-named tensors differs.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Another dtype (with `--values` and the same shape, the values compared across).
    Dtype(Option<ValueDiff>),
    /// Another shape.
    Shape,
    /// The same dtype and shape, other bytes (with `--values`, by how much).
    Data(Option<ValueDiff>),
}

/// A pair that differs.
#[derive(Clone, Debug, PartialEq)]
pub struct Changed {
    /// The first side's tensor.
    pub a: TensorInfo,
    /// The second side's.
    pub b: TensorInfo,
    /// How.
    pub change: Change,
}

/// The comparison of two checkpoints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiffReport {
    /// Tensors compared and found identical.
    pub same: u64,
    /// Bytes of the identical tensors (canonical form).
    pub same_bytes: u64,
    /// Tensors only the first side has.
    pub only_a: Vec<TensorInfo>,
    /// Tensors only the second side has.
    pub only_b: Vec<TensorInfo>,
    /// Pairs that differ, by name.
    pub changed: Vec<Changed>,
}

impl DiffReport {
    /// True when both sides hold the same tensors with the same values.
    pub fn identical(&self) -> bool {
        self.only_a.is_empty() && self.only_b.is_empty() && self.changed.is_empty()
    }
}

/// How the values beside the tensors (a step count, a learning rate, a string) compare.
/// They are reported beside the weights and do not decide whether two checkpoints hold
/// the same weights.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntryReport {
    /// Values equal on both sides.
    pub same: u64,
    /// Values under the same name that differ: (A's, B's).
    pub changed: Vec<(Entry, Entry)>,
    /// Values under the same name not known in full on a side (a long bytes value, an
    /// object of a class), so not compared: (A's, B's).
    pub not_compared: Vec<(Entry, Entry)>,
    /// Values only the first side has (not compared).
    pub only_a: Vec<Entry>,
    /// Values only the second side has (not compared).
    pub only_b: Vec<Entry>,
}

/// Compares the values `a` (renamed by `map`) with the values `b` by name.
pub fn diff_entries(a: &[Entry], b: &[Entry], map: &MapRules) -> EntryReport {
    let mut a: Vec<Entry> = a
        .iter()
        .map(|e| Entry {
            name: map.apply(&e.name),
            ..e.clone()
        })
        .collect();
    a.sort_by(|x, y| x.name.cmp(&y.name));
    let mut b = b.to_vec();
    b.sort_by(|x, y| x.name.cmp(&y.name));
    let mut report = EntryReport::default();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.name.cmp(&y.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                report.only_a.push(a[i].clone());
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                report.only_b.push(b[j].clone());
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let pair = (a[i].clone(), b[j].clone());
                match (a[i].digest, b[j].digest) {
                    (Some(x), Some(y)) if x == y => report.same += 1,
                    (Some(_), Some(_)) => report.changed.push(pair),
                    _ => report.not_compared.push(pair),
                }
                i += 1;
                j += 1;
            }
        }
    }
    report
}

/// Compares the tensors `a` with the tensors `b`.
pub fn diff(a: &[Tensor], b: &[Tensor], options: &DiffOptions) -> Result<DiffReport, Error> {
    let mut renamed: Vec<(String, &Tensor)> =
        a.iter().map(|t| (options.map.apply(&t.name), t)).collect();
    renamed.sort_by(|x, y| x.0.cmp(&y.0));
    if let Some(w) = renamed.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::Malformed {
            path: w[0].1.file.clone(),
            reason: format!(
                "tensors `{}` and `{}` are both renamed to `{}` by the map",
                w[0].1.name, w[1].1.name, w[0].0
            ),
        });
    }
    let mut by_name: Vec<(&str, &Tensor)> = b.iter().map(|t| (t.name.as_str(), t)).collect();
    by_name.sort_by(|x, y| x.0.cmp(y.0));
    let mut report = DiffReport::default();
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < renamed.len() || j < by_name.len() {
        let order = match (renamed.get(i), by_name.get(j)) {
            (Some(x), Some(y)) => x.0.as_str().cmp(y.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                report.only_a.push(TensorInfo::of(renamed[i].1));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                report.only_b.push(TensorInfo::of(by_name[j].1));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                pairs.push((renamed[i].1, by_name[j].1));
                i += 1;
                j += 1;
            }
        }
    }
    let results: Vec<Result<Option<Change>, Error>> = pairs
        .par_iter()
        .map(|(x, y)| compare(x, y, options.values))
        .collect();
    for ((x, y), result) in pairs.iter().zip(results) {
        match result? {
            None => {
                report.same += 1;
                report.same_bytes += x.bytes().unwrap_or(0);
            }
            Some(change) => report.changed.push(Changed {
                a: TensorInfo::of(x),
                b: TensorInfo::of(y),
                change,
            }),
        }
    }
    Ok(report)
}

/// How `a` and `b` differ, `None` when they do not.
pub fn compare(a: &Tensor, b: &Tensor, values: bool) -> Result<Option<Change>, Error> {
    if a.shape != b.shape {
        return Ok(Some(Change::Shape));
    }
    if a.dtype != b.dtype {
        let numeric =
            super::values::reader(a.dtype).is_some() && super::values::reader(b.dtype).is_some();
        let diff = match values && numeric {
            true => Some(stream(a, b, true)?.1),
            false => None,
        };
        return Ok(Some(Change::Dtype(diff)));
    }
    let (same, diff) = stream(a, b, values)?;
    Ok((!same).then(|| Change::Data(values.then_some(diff))))
}

/// Streams both canonical forms; returns whether they are byte-identical and, when
/// `values`, the element comparison (else stops at the first difference).
fn stream(a: &Tensor, b: &Tensor, values: bool) -> Result<(bool, ValueDiff), Error> {
    let mut ra = a.canonical()?;
    let mut rb = b.canonical()?;
    let mut compare = Compare::new(a.dtype, b.dtype);
    let packed = !a.dtype.bits().is_multiple_of(8);
    if a.dtype != b.dtype {
        // A conversion: blocks of the same element count on both sides, copied.
        let (sa, sb) = (a.dtype.size() as usize, b.dtype.size() as usize);
        let count = BLOCK / sa.max(sb);
        let (mut ba, mut bb) = (vec![0u8; count * sa], vec![0u8; count * sb]);
        let mut left = a.numel().unwrap_or(0);
        while left > 0 {
            let n = (left as usize).min(count);
            ra.read_exact(&mut ba[..n * sa])
                .map_err(|e| read_error(a, e))?;
            rb.read_exact(&mut bb[..n * sb])
                .map_err(|e| read_error(b, e))?;
            compare.update(&ba[..n * sa], &bb[..n * sb]);
            left -= n as u64;
        }
        return Ok((false, compare.diff));
    }
    // The same dtype: both readers give blocks of the same sizes, compared in place.
    let size = a.dtype.size() as usize;
    let mut same = true;
    loop {
        let ca = ra.next_chunk().map_err(|e| read_error(a, e))?;
        let cb = rb.next_chunk().map_err(|e| read_error(b, e))?;
        let n = ca.len().min(cb.len());
        if n == 0 {
            break;
        }
        let n = if packed { n } else { n - n % size };
        if ca[..n] != cb[..n] {
            same = false;
            if !values || packed {
                break;
            }
            compare.update(&ca[..n], &cb[..n]);
        } else if values && !packed {
            compare.diff.elements += (n / size) as u64;
        }
        ra.consume(n);
        rb.consume(n);
    }
    Ok((same, compare.diff))
}
