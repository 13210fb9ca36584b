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

use super::render::render;
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

/// A step of the walk: a node entered under a path at a depth, or left.
enum Step {
    Enter(Id, String, usize),
    Leave(Id),
}

/// Walks `p` from its root.
pub fn reach(p: &Pickle) -> Reached {
    let mut out = Reached::default();
    let mut index: std::collections::HashMap<Id, usize> = Default::default();
    // Children pushed, and bytes of their names: both bounded.
    let mut budget = p.nodes.len().saturating_mul(2).saturating_add(4096);
    let mut bytes = MAX_NAME_BYTES;
    let mut on_path: HashSet<Id> = HashSet::new();
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
        if tensor_call(p, id).is_some() {
            let at = *index.entry(id).or_insert_with(|| {
                out.tensors.push((id, Vec::new()));
                out.tensors.len() - 1
            });
            out.tensors[at].1.push(shown_name(&path));
            continue;
        }
        let children = children(p, id, &path, &mut out);
        if children.is_empty() {
            continue;
        }
        let cost = names_cost(p, &path, &children);
        if children.len() > budget || cost > bytes {
            out.truncated = true;
            break;
        }
        budget -= children.len();
        bytes -= cost;
        on_path.insert(id);
        stack.push(Step::Leave(id));
        push_children(&mut stack, p, &path, depth, children);
    }
    out
}

/// The name a value at `path` is shown by (`<root>` for the root).
fn shown_name(path: &str) -> String {
    match path.is_empty() {
        true => "<root>".to_string(),
        false => path.to_string(),
    }
}

/// The children of the node `id` (at `path`) the walk goes on to, in order; a leaf
/// (a value, or a tensor that is not a plain view) is recorded in `out` instead.
fn children(p: &Pickle, id: Id, path: &str, out: &mut Reached) -> Vec<(Id, Via)> {
    let mut children: Vec<(Id, Via)> = Vec::new();
    match p.node(id) {
        Node::Call(func, args) => {
            let func = p.global_name(*func).unwrap_or_default();
            match p.items(*args).and_then(|a| a.first()) {
                Some(&first) if is_wrapper(&func) => children.push((first, Via::Same)),
                _ if is_other_tensor(&func) => out.others.push((shown_name(path), func)),
                _ => out.entries.push(entry(p, id, shown_name(path))),
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
                out.entries.push(entry(p, id, shown_name(path)));
            }
        }
        _ => out.entries.push(entry(p, id, shown_name(path))),
    }
    children
}

/// Bytes of the names of `children` under `path`.
fn names_cost(p: &Pickle, path: &str, children: &[(Id, Via)]) -> usize {
    children
        .iter()
        .map(|(_, via)| {
            path.len()
                + match via {
                    Via::Same => 0,
                    Via::Key(k) => 1 + key_len(p, *k),
                    Via::Index(i) => 1 + i.to_string().len(),
                }
        })
        .sum()
}

/// Pushes `children` of the node at `path` reversed, so that the first is walked first.
fn push_children(
    stack: &mut Vec<Step>,
    p: &Pickle,
    path: &str,
    depth: usize,
    children: Vec<(Id, Via)>,
) {
    for (c, via) in children.into_iter().rev() {
        let key = match via {
            Via::Same => {
                stack.push(Step::Enter(c, path.to_string(), depth + 1));
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
