//! `diff`'s summary: each kind of difference, then the verdict.

use shardsmith_checkpoint::tensors::ValueDiff;
use shardsmith_checkpoint::tensors::diff::{Change, Changed, EntryReport, TensorInfo};

use super::Diffed;
use crate::size::human_bytes;

/// Lines shown per kind of difference before "... and N more".
const SHOWN: usize = 50;

impl Diffed {
    /// The human summary.
    pub fn text(&self) -> String {
        let (found, entries) = (&self.found, &self.entries);
        let (a_shown, b_shown) = (&self.a, &self.b);
        let mut text = String::new();
        let mut section = |label: &str, lines: Vec<String>| {
            for line in lines.iter().take(SHOWN) {
                text.push_str(&format!("  {label:<10}{line}\n"));
            }
            if lines.len() > SHOWN {
                text.push_str(&format!(
                    "  {label:<10}... and {} more (--json lists all)\n",
                    lines.len() - SHOWN
                ));
            }
        };
        section("only in A", found.only_a.iter().map(tensor).collect());
        section("only in B", found.only_b.iter().map(tensor).collect());
        for kind in ["dtype", "shape", "data"] {
            let lines = found
                .changed
                .iter()
                .filter(|c| change_kind(c) == kind)
                .map(changed)
                .collect();
            section(kind, lines);
        }
        section(
            "value",
            entries
                .changed
                .iter()
                .map(|(x, y)| format!("{}: {} -> {}", x.name, x.shown, y.shown))
                .collect(),
        );
        section("unchecked", unchecked(entries));
        let verdict = if found.identical() {
            format!(
                "the same weights: {} tensors, {}",
                found.same,
                human_bytes(found.same_bytes)
            )
        } else {
            let mut parts = Vec::new();
            for (n, what) in [
                (found.changed.len(), "changed"),
                (found.only_a.len(), "only in A"),
                (found.only_b.len(), "only in B"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            parts.push(format!("{} same", found.same));
            parts.join(", ")
        };
        let verdict = match values_verdict(entries) {
            Some(values) => format!("{verdict}; {values}"),
            None => verdict,
        };
        text.push_str(&format!("A {a_shown}\nB {b_shown}\n{verdict}\n"));
        text
    }
}

/// The values beside the tensors that were not compared, one line each.
fn unchecked(e: &EntryReport) -> Vec<String> {
    let mut lines: Vec<(String, String)> = e
        .only_a
        .iter()
        .map(|x| {
            (
                x.name.clone(),
                format!("{} = {} (only in A)", x.name, x.shown),
            )
        })
        .chain(e.only_b.iter().map(|y| {
            (
                y.name.clone(),
                format!("{} = {} (only in B)", y.name, y.shown),
            )
        }))
        .chain(e.not_compared.iter().map(|(x, y)| {
            (
                x.name.clone(),
                format!("{}: {} / {} (not known in full)", x.name, x.shown, y.shown),
            )
        }))
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, line)| line).collect()
}

/// The values' part of the verdict, when either side has values beside its tensors.
fn values_verdict(e: &EntryReport) -> Option<String> {
    let unchecked = e.only_a.len() + e.only_b.len() + e.not_compared.len();
    let mut parts = Vec::new();
    for (n, what) in [
        (e.same as usize, "same"),
        (e.changed.len(), "differ"),
        (unchecked, "not compared"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    (!parts.is_empty()).then(|| format!("values beside the tensors: {}", parts.join(", ")))
}

fn dims(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(", "))
}

fn tensor(t: &TensorInfo) -> String {
    format!("{} ({} {})", t.name, t.dtype, dims(&t.shape))
}

fn change_kind(c: &Changed) -> &'static str {
    match c.change {
        Change::Dtype(_) => "dtype",
        Change::Shape => "shape",
        Change::Data(_) => "data",
    }
}

/// A number in the fewest characters that keep six significant digits.
fn num(x: f64) -> String {
    if x == 0.0 || (1e-4..1e6).contains(&x.abs()) {
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        format!("{x:.3e}")
    }
}

fn values(v: &ValueDiff) -> String {
    let mut s = format!("{} of {} elements differ", v.differing, v.elements);
    if let Some(first) = v.first {
        s.push_str(&format!(" (first at {first})"));
    }
    if v.by_value && v.differing > v.non_finite + v.bit_only {
        s.push_str(&format!(
            ", max abs {}, max rel {}",
            num(v.max_abs),
            num(v.max_rel)
        ));
    }
    if v.non_finite > 0 {
        s.push_str(&format!(", {} with NaN or Inf on one side", v.non_finite));
    }
    if v.bit_only > 0 {
        s.push_str(&format!(
            ", {} only in their bits (a NaN payload or a signed zero)",
            v.bit_only
        ));
    }
    s
}

fn changed(c: &Changed) -> String {
    let renamed = if c.a.name == c.b.name {
        c.a.name.clone()
    } else {
        format!("{} -> {}", c.a.name, c.b.name)
    };
    let (what, v) = match &c.change {
        Change::Dtype(v) => (
            format!("{} -> {} {}", c.a.dtype, c.b.dtype, dims(&c.a.shape)),
            v,
        ),
        Change::Shape => (
            format!("{} {} -> {}", c.a.dtype, dims(&c.a.shape), dims(&c.b.shape)),
            &None,
        ),
        Change::Data(v) => (format!("{} {}", c.a.dtype, dims(&c.a.shape)), v),
    };
    match v {
        Some(v) => format!("{renamed} ({what}): {}", values(v)),
        None => format!("{renamed} ({what})"),
    }
}
