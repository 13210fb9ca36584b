//! What a loader returns of a torch pickle, walked from its root: every name a tensor
//! is reached by (one tensor object saved under two keys, `{'a': t, 'b': t}` or tied
//! weights, is returned under both), and every value that is not a tensor (a step
//! count, a learning rate, a string), shown in short.
//!
//! Shared containers are walked once per path that reaches them, as Python returns
//! them; cycles are cut, and the walk stops after a budget of visits proportional to
//! the pickle (a pickle of nested shared lists would otherwise name 2^N paths).

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::pickle::{Id, Node, Pickle};

/// How far the walk descends into nested containers.
const MAX_DEPTH: usize = 64;

/// Longest value shown in full.
const SHOWN: usize = 80;

/// A value of the pickle that is not a tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Dotted name (`optimizer.param_groups.0.lr`).
    pub name: String,
    /// The value, Python-like and short (`5`, `0.001`, `'adamw'`, `{1, 2}`).
    pub shown: String,
    /// A digest of the whole value when it is known in full (numbers, strings, short
    /// bytes, sets of such), so two entries compare; `None` when it is not (a long
    /// bytes value, a storage, an object of a class).
    pub digest: Option<u64>,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Reached {
    /// Each tensor (its rebuild call) with every name it is reached by, in the order
    /// first reached.
    pub tensors: Vec<(Id, Vec<String>)>,
    /// The values that are not tensors.
    pub entries: Vec<Entry>,
    /// Tensors of other layouts (quantized, sparse, ...): name and rebuild function.
    pub others: Vec<(String, String)>,
    /// The walk stopped at its budget: names past it are missing.
    pub truncated: bool,
}

/// The rebuild function and arguments of the tensor at `id`, when it is a plain strided
/// tensor: `_rebuild_tensor{,_v2,_v3}(storage, offset, size, stride, ...)`, directly or
/// inside `_rebuild_from_type_v2` (a tensor with Python attributes or of a subclass).
pub fn tensor_call(p: &Pickle, id: Id) -> Option<(String, &[Id])> {
    let Node::Call(func, args) = p.node(id) else {
        return None;
    };
    let func = p.global_name(*func)?;
    if is_rebuild_tensor(&func) {
        return Some((func, p.items(*args)?));
    }
    if func == "torch._tensor._rebuild_from_type_v2" {
        let args = p.items(*args)?;
        let inner = p.global_name(*args.first()?)?;
        if is_rebuild_tensor(&inner) {
            return Some((inner, p.items(*args.get(2)?)?));
        }
    }
    None
}

fn is_rebuild_tensor(func: &str) -> bool {
    matches!(
        func,
        "torch._utils._rebuild_tensor"
            | "torch._utils._rebuild_tensor_v2"
            | "torch._utils._rebuild_tensor_v3"
    )
}

/// Calls that wrap a tensor passed first (`_rebuild_parameter(tensor, requires_grad,
/// hooks)`): their value is that tensor.
fn is_wrapper(func: &str) -> bool {
    matches!(
        func,
        "torch._utils._rebuild_parameter" | "torch._utils._rebuild_parameter_with_state"
    )
}

/// Calls that build a tensor that is not one strided view of one storage (quantized,
/// sparse, nested, a wrapper subclass), from parts.
fn is_other_tensor(func: &str) -> bool {
    func.starts_with("torch._utils._rebuild_") || func == "torch._tensor._rebuild_from_type_v2"
}

/// Most bytes of names the walk makes: past them, it stops (a 4 kB pickle of shared
/// dicts with long keys could otherwise name gigabytes).
const MAX_NAME_BYTES: usize = 64 << 20;

/// Where a child is reached from its parent: by the parent's own name (a wrapper), a
/// key, or an index.
enum Via {
    Same,
    Key(Id),
    Index(usize),
}

/// Walks `p` from its root.
pub fn reach(p: &Pickle) -> Reached {
    let mut out = Reached::default();
    let mut index: std::collections::HashMap<Id, usize> = Default::default();
    // Children pushed, and bytes of their names: both bounded.
    let mut budget = p.nodes.len().saturating_mul(2).saturating_add(4096);
    let mut bytes = MAX_NAME_BYTES;
    let mut on_path: HashSet<Id> = HashSet::new();
    enum Step {
        Enter(Id, String, usize),
        Leave(Id),
    }
    let mut stack = vec![Step::Enter(p.root, String::new(), 0)];
    while let Some(step) = stack.pop() {
        let (id, path, depth) = match step {
            Step::Leave(id) => {
                on_path.remove(&id);
                continue;
            }
            Step::Enter(id, path, depth) => (id, path, depth),
        };
        if depth > MAX_DEPTH || on_path.contains(&id) {
            continue;
        }
        let name = |path: &str| match path.is_empty() {
            true => "<root>".to_string(),
            false => path.to_string(),
        };
        if tensor_call(p, id).is_some() {
            let at = *index.entry(id).or_insert_with(|| {
                out.tensors.push((id, Vec::new()));
                out.tensors.len() - 1
            });
            out.tensors[at].1.push(name(&path));
            continue;
        }
        // Children, in order; pushed reversed so the first is walked first.
        let mut children: Vec<(Id, Via)> = Vec::new();
        match p.node(id) {
            Node::Call(func, args) => {
                let func = p.global_name(*func).unwrap_or_default();
                match p.items(*args).and_then(|a| a.first()) {
                    Some(&first) if is_wrapper(&func) => children.push((first, Via::Same)),
                    _ if is_other_tensor(&func) => out.others.push((name(&path), func)),
                    _ => out.entries.push(entry(p, id, name(&path))),
                }
            }
            Node::Dict(items) if !items.is_empty() => {
                children.extend(items.iter().map(|&(k, v)| (v, Via::Key(k))));
            }
            Node::List(items) | Node::Tuple(items) if !items.is_empty() => {
                children.extend(items.iter().enumerate().map(|(i, &c)| (c, Via::Index(i))));
            }
            Node::Object { args, .. } => {
                let first = p.items(*args).and_then(|a| a.first()).copied();
                let wraps = first.filter(|&f| tensor_call(p, f).is_some());
                let entries = p.dict_entries(id).filter(|e| !e.is_empty());
                if let Some(first) = wraps {
                    children.push((first, Via::Same));
                }
                if let Some(entries) = entries {
                    children.extend(entries.iter().map(|&(k, v)| (v, Via::Key(k))));
                } else if wraps.is_none() {
                    out.entries.push(entry(p, id, name(&path)));
                }
            }
            _ => out.entries.push(entry(p, id, name(&path))),
        }
        if children.is_empty() {
            continue;
        }
        let cost: usize = children
            .iter()
            .map(|(_, via)| {
                path.len()
                    + match via {
                        Via::Same => 0,
                        Via::Key(k) => 1 + key_len(p, *k),
                        Via::Index(i) => 1 + i.to_string().len(),
                    }
            })
            .sum();
        if children.len() > budget || cost > bytes {
            out.truncated = true;
            break;
        }
        budget -= children.len();
        bytes -= cost;
        on_path.insert(id);
        stack.push(Step::Leave(id));
        for (c, via) in children.into_iter().rev() {
            let key = match via {
                Via::Same => {
                    stack.push(Step::Enter(c, path.clone(), depth + 1));
                    continue;
                }
                Via::Key(k) => key(p, k),
                Via::Index(i) => i.to_string(),
            };
            let child = match path.is_empty() {
                true => key,
                false => format!("{path}.{key}"),
            };
            stack.push(Step::Enter(c, child, depth + 1));
        }
    }
    out
}

/// Bytes of the name [`key`] gives the key at `k`.
fn key_len(p: &Pickle, k: Id) -> usize {
    match p.node(k) {
        Node::Str(s) => s.len(),
        Node::Int(i) => i.to_string().len(),
        Node::Bool(b) => 4 + usize::from(!*b),
        _ => 1,
    }
}

fn key(p: &Pickle, k: Id) -> String {
    match p.node(k) {
        Node::Str(s) => s.clone(),
        Node::Int(i) => i.to_string(),
        Node::Bool(b) => if *b { "True" } else { "False" }.into(),
        _ => "?".into(),
    }
}

fn entry(p: &Pickle, id: Id, name: String) -> Entry {
    let mut text = String::new();
    let whole = render(p, id, &mut text, 0);
    let digest = whole.then(|| {
        let mut h = DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    });
    let shown = if text.chars().count() > SHOWN {
        let cut: String = text.chars().take(SHOWN - 3).collect();
        format!("{cut}...")
    } else {
        text
    };
    Entry {
        name,
        shown,
        digest,
    }
}

/// Longest rendering kept; past it the value is not known in full.
const MAX_RENDER: usize = 1024;

/// Appends a Python-like rendering of the value at `id`; false when some of it is not
/// known (long bytes, storages, objects of classes, too deep or too long).
fn render(p: &Pickle, id: Id, out: &mut String, depth: usize) -> bool {
    if depth > 4 || out.len() > MAX_RENDER {
        out.push_str("...");
        return false;
    }
    let list = |items: &[Id], out: &mut String, sort: bool| -> bool {
        let mut parts = Vec::new();
        let mut whole = true;
        let mut len = out.len();
        for &item in items {
            let mut s = String::new();
            whole &= render(p, item, &mut s, depth + 1);
            len += s.len() + 2;
            parts.push(s);
            if len > MAX_RENDER {
                out.push_str("...");
                return false;
            }
        }
        if sort {
            parts.sort();
        }
        out.push_str(&parts.join(", "));
        whole
    };
    match p.node(id) {
        Node::None => out.push_str("None"),
        Node::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Node::Int(i) => out.push_str(&i.to_string()),
        Node::BigInt(n) => {
            out.push_str(&format!("<int of {n} bytes>"));
            return false;
        }
        Node::Float(f) => {
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
                out.push_str(&format!("{f:.1}"));
            } else {
                out.push_str(&format!("{f}"));
            }
        }
        Node::Str(s) => {
            out.push('\'');
            for c in s.chars() {
                if out.len() > MAX_RENDER {
                    out.push_str("...");
                    return false;
                }
                match c {
                    '\'' => out.push_str("\\'"),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out.push('\'');
        }
        Node::Bytes(n, kept) => {
            if kept.len() != *n || *n > MAX_RENDER {
                out.push_str(&format!("<{n} bytes>"));
                return false;
            }
            out.push_str("b'");
            for &b in kept {
                match b {
                    b'\'' | b'\\' => out.push_str(&format!("\\{}", b as char)),
                    0x20..=0x7e => out.push(b as char),
                    _ => out.push_str(&format!("\\x{b:02x}")),
                }
            }
            out.push('\'');
        }
        Node::Tuple(items) => {
            out.push('(');
            let whole = list(items, out, false);
            out.push_str(if items.len() == 1 { ",)" } else { ")" });
            return whole;
        }
        Node::List(items) => {
            out.push('[');
            let whole = list(items, out, false);
            out.push(']');
            return whole;
        }
        Node::Set(items) => {
            out.push('{');
            let whole = list(items, out, true);
            out.push('}');
            return whole;
        }
        Node::Dict(items) => {
            out.push('{');
            let mut whole = true;
            for (i, &(k, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                whole &= render(p, k, out, depth + 1);
                out.push_str(": ");
                whole &= render(p, v, out, depth + 1);
                if out.len() > MAX_RENDER {
                    return false;
                }
            }
            out.push('}');
            return whole;
        }
        Node::Global(m, n) => out.push_str(&format!("{m}.{n}")),
        Node::Call(func, args) => {
            let name = p.global_name(*func).unwrap_or_else(|| "?".into());
            let items = p.items(*args).unwrap_or(&[]);
            match name.as_str() {
                // Values the weights_only reader builds from plain data.
                "builtins.set" | "builtins.frozenset" => {
                    let inner = items.first().and_then(|&a| p.items(a)).unwrap_or(&[]);
                    let frozen = name == "builtins.frozenset";
                    out.push_str(if frozen { "frozenset({" } else { "{" });
                    let whole = list(inner, out, true);
                    out.push_str(if frozen { "})" } else { "}" });
                    return whole;
                }
                "_codecs.encode" => {
                    // bytes saved by protocol 2: encode(latin-1 text, 'latin1').
                    let text = items.first().and_then(|&a| p.str(a)).unwrap_or("");
                    out.push_str("b'");
                    for c in text.chars() {
                        if out.len() > MAX_RENDER {
                            out.push_str("...");
                            return false;
                        }
                        match c as u32 {
                            0x27 | 0x5c => out.push_str(&format!("\\{c}")),
                            0x20..=0x7e => out.push(c),
                            v => out.push_str(&format!("\\x{v:02x}")),
                        }
                    }
                    out.push('\'');
                }
                _ => {
                    out.push_str(&name);
                    out.push('(');
                    let whole = list(items, out, false);
                    out.push(')');
                    return whole && matches!(name.as_str(), "torch.device" | "torch.Size");
                }
            }
        }
        Node::Object { class, .. } => {
            let name = p.global_name(*class).unwrap_or_else(|| "?".into());
            out.push_str(&format!("<{name} object>"));
            return false;
        }
        Node::PersId(_) => {
            out.push_str("<storage>");
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pickle::parse;

    #[test]
    fn shared_dicts_with_long_keys_cost_a_bounded_walk() {
        // 60 levels of {KEY: next, KEY2: next} sharing one 4 kB key: 2^60 paths of up to
        // 240 kB each, from a pickle of a few kB.
        let key = "k".repeat(4096);
        let mut p = b"\x80\x02X".to_vec();
        p.extend_from_slice(&(key.len() as u32).to_le_bytes());
        p.extend_from_slice(key.as_bytes());
        p.extend_from_slice(b"q\x000K\x07");
        for _ in 0..60 {
            // {key: top, 'b': top}
            p.extend_from_slice(b"q\x01}h\x00h\x01sX\x01\x00\x00\x00bh\x01s");
        }
        p.push(b'.');
        let p = parse(&p).unwrap();
        let started = std::time::Instant::now();
        let r = reach(&p);
        assert!(r.truncated);
        let names: usize = r.entries.iter().map(|e| e.name.len()).sum();
        assert!(names <= MAX_NAME_BYTES, "{names}");
        assert!(started.elapsed().as_secs() < 5);
    }

    #[test]
    fn a_tensor_under_two_names_is_reached_by_both_and_cycles_end() {
        // {'a': T, 'b': <memo of T>, 'n': 5, 'l': [<the list itself>]}
        let mut p =
            b"\x80\x02}q\x00(X\x01\x00\x00\x00actorch._utils\n_rebuild_tensor_v2\nq\x01)Rq\x02"
                .to_vec();
        p.extend_from_slice(
            b"X\x01\x00\x00\x00bh\x02X\x01\x00\x00\x00nK\x05X\x01\x00\x00\x00l]q\x03h\x03au.",
        );
        let p = parse(&p).unwrap();
        let r = reach(&p);
        assert_eq!(r.tensors.len(), 1);
        assert_eq!(r.tensors[0].1, ["a", "b"]);
        assert_eq!(r.entries.len(), 1, "{:?}", r.entries);
        assert_eq!(
            (r.entries[0].name.as_str(), r.entries[0].shown.as_str()),
            ("n", "5")
        );
        assert!(r.entries[0].digest.is_some());
        assert!(!r.truncated);
    }
}
