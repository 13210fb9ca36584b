//! A Python-like rendering of a pickle value (as `repr` shows it), bounded in depth
//! and length, and whether it is the value in full.

use crate::pickle::{Id, Node, Pickle};

/// Longest rendering kept; past it the value is not known in full.
const MAX_RENDER: usize = 1024;

/// Appends a Python-like rendering of the value at `id`; false when some of it is not
/// known (long bytes, storages, objects of classes, too deep or too long).
pub(super) fn render(p: &Pickle, id: Id, out: &mut String, depth: usize) -> bool {
    if depth > 4 || out.len() > MAX_RENDER {
        out.push_str("...");
        return false;
    }
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
        Node::Str(s) => return render_str(s, out),
        Node::Bytes(n, kept) => return render_bytes(*n, kept, out),
        Node::Tuple(items) => {
            out.push('(');
            let whole = render_list(p, items, out, false, depth);
            out.push_str(if items.len() == 1 { ",)" } else { ")" });
            return whole;
        }
        Node::List(items) => {
            out.push('[');
            let whole = render_list(p, items, out, false, depth);
            out.push(']');
            return whole;
        }
        Node::Set(items) => {
            out.push('{');
            let whole = render_list(p, items, out, true, depth);
            out.push('}');
            return whole;
        }
        Node::Dict(items) => return render_dict(p, items, out, depth),
        Node::Global(m, n) => out.push_str(&format!("{m}.{n}")),
        Node::Call(func, args) => return render_call(p, *func, *args, out, depth),
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

/// The items of a container at `depth`, comma-separated (sorted for a set).
fn render_list(p: &Pickle, items: &[Id], out: &mut String, sort: bool, depth: usize) -> bool {
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
}

/// A string, quoted and escaped as Python's `repr` does the common cases.
fn render_str(s: &str, out: &mut String) -> bool {
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
    true
}

/// Bytes of length `n` (`kept` when short enough to be kept), as a `b'...'` literal.
fn render_bytes(n: usize, kept: &[u8], out: &mut String) -> bool {
    if kept.len() != n || n > MAX_RENDER {
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
    true
}

/// A dict's `key: value` pairs in braces.
fn render_dict(p: &Pickle, items: &[(Id, Id)], out: &mut String, depth: usize) -> bool {
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
    whole
}

/// A call `func(*args)`: the sets and bytes the weights_only reader builds from plain
/// data shown as their values, any other call by its name and arguments (in full only
/// for `torch.device` and `torch.Size`).
fn render_call(p: &Pickle, func: Id, args: Id, out: &mut String, depth: usize) -> bool {
    let name = p.global_name(func).unwrap_or_else(|| "?".into());
    let items = p.items(args).unwrap_or(&[]);
    match name.as_str() {
        // Values the weights_only reader builds from plain data.
        "builtins.set" | "builtins.frozenset" => {
            let inner = items.first().and_then(|&a| p.items(a)).unwrap_or(&[]);
            let frozen = name == "builtins.frozenset";
            out.push_str(if frozen { "frozenset({" } else { "{" });
            let whole = render_list(p, inner, out, true, depth);
            out.push_str(if frozen { "})" } else { "}" });
            whole
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
            true
        }
        _ => {
            out.push_str(&name);
            out.push('(');
            let whole = render_list(p, items, out, false, depth);
            out.push(')');
            whole && matches!(name.as_str(), "torch.device" | "torch.Size")
        }
    }
}
