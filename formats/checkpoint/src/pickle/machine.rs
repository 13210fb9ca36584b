//! The symbolic machine's state and the reads every opcode shares.

use std::collections::HashMap;

use super::fault::Fault;
use super::node::{Id, KEEP_BYTES, Node};

pub(super) struct Machine<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
    pub(super) nodes: Vec<Node>,
    pub(super) stack: Vec<Id>,
    pub(super) marks: Vec<usize>,
    pub(super) memo: HashMap<u64, Id>,
    pub(super) globals: Vec<String>,
    pub(super) proto: u8,
    pub(super) weights_only_refuses: Option<(usize, u8)>,
    pub(super) truncated: bool,
}

pub(super) type R<T> = Result<T, Fault>;

impl<'a> Machine<'a> {
    pub(super) fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let data: &'a [u8] = self.data;
        if n > data.len() - self.pos {
            self.truncated = true;
            return Err(Fault::Truncated {
                need: n,
                remain: data.len() - self.pos,
            });
        }
        let out = &data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(super) fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn uint(&mut self, n: usize) -> R<u64> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    pub(super) fn line(&mut self) -> R<&'a str> {
        let data: &'a [u8] = self.data;
        let rest = &data[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            self.truncated = true;
            return Err(Fault::UnendedLine);
        };
        self.pos += end + 1;
        std::str::from_utf8(&rest[..end]).map_err(|_| Fault::LineNotUtf8)
    }

    pub(super) fn push_node(&mut self, node: Node) {
        let id = self.nodes.len();
        self.nodes.push(node);
        self.stack.push(id);
    }

    pub(super) fn pop(&mut self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Fault::StackUnderflow);
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    pub(super) fn top(&self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(Fault::StackUnderflow);
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    pub(super) fn pop_mark(&mut self) -> R<Vec<Id>> {
        let mark = self.marks.pop().ok_or(Fault::NoMark)?;
        Ok(self.stack.split_off(mark))
    }

    pub(super) fn text(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| Fault::LengthOverflows("string"))?;
        let bytes = self.take(n)?;
        let s = String::from_utf8_lossy(bytes).into_owned();
        self.push_node(Node::Str(s));
        Ok(())
    }

    pub(super) fn bytes(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| Fault::LengthOverflows("bytes"))?;
        let bytes = self.take(n)?;
        let kept = if n <= KEEP_BYTES {
            bytes.to_vec()
        } else {
            Vec::new()
        };
        self.push_node(Node::Bytes(n, kept));
        Ok(())
    }

    pub(super) fn long(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| Fault::LengthOverflows("integer"))?;
        let bytes = self.take(n)?;
        let node = if n <= 8 {
            let mut v: i64 = 0;
            for (i, &b) in bytes.iter().enumerate() {
                v |= i64::from(b) << (8 * i);
            }
            if n > 0 && n < 8 && bytes[n - 1] & 0x80 != 0 {
                v -= 1i64 << (8 * n);
            }
            Node::Int(v)
        } else {
            Node::BigInt(n)
        };
        self.push_node(node);
        Ok(())
    }

    pub(super) fn global(&mut self, module: String, name: String) {
        let (module, name) = if self.proto < 3 {
            py2_name(module, name)
        } else {
            (module, name)
        };
        let full = format!("{module}.{name}");
        if !self.globals.contains(&full) {
            self.globals.push(full);
        }
        self.push_node(Node::Global(module, name));
    }

    pub(super) fn memo_put(&mut self, key: u64) -> R<()> {
        let top = self.top()?;
        self.memo.insert(key, top);
        Ok(())
    }

    pub(super) fn memo_get(&mut self, key: u64) -> R<()> {
        let id = *self.memo.get(&key).ok_or(Fault::MemoMissing(key))?;
        self.stack.push(id);
        Ok(())
    }

    pub(super) fn set_items(&mut self, target: Id, items: Vec<Id>) -> R<()> {
        if !items.len().is_multiple_of(2) {
            return Err(Fault::OddItems("SETITEMS"));
        }
        match &mut self.nodes[target] {
            Node::Dict(entries) => {
                entries.extend(items.chunks(2).map(|kv| (kv[0], kv[1])));
                Ok(())
            }
            // `OrderedDict()` and other dict subclasses are built by REDUCE/NEWOBJ, then
            // filled with SETITEMS: keep the entries as the object's state.
            Node::Call(..) | Node::Object { .. } => {
                let dict = self.nodes.len();
                self.nodes.push(Node::Dict(
                    items.chunks(2).map(|kv| (kv[0], kv[1])).collect(),
                ));
                self.attach_items(target, dict)
            }
            _ => Err(Fault::SetItemsNotDict),
        }
    }

    /// Merges `dict` into the item dict of a call/object node (wrapping a call in an
    /// object so the items have a place to live).
    pub(super) fn attach_items(&mut self, target: Id, dict: Id) -> R<()> {
        if let Node::Call(func, args) = self.nodes[target] {
            self.nodes[target] = Node::Object {
                class: func,
                args,
                state: None,
            };
        }
        let Node::Object { state, .. } = &mut self.nodes[target] else {
            unreachable!("made an object above")
        };
        match *state {
            None => *state = Some(dict),
            Some(existing) => {
                let Node::Dict(more) = self.nodes[dict].clone() else {
                    return Ok(());
                };
                if let Node::Dict(entries) = &mut self.nodes[existing] {
                    entries.extend(more);
                }
            }
        }
        Ok(())
    }

    pub(super) fn append(&mut self, target: Id, items: Vec<Id>) -> R<()> {
        match &mut self.nodes[target] {
            Node::List(list) | Node::Set(list) => {
                list.extend(items);
                Ok(())
            }
            Node::Call(..) | Node::Object { .. } => Ok(()),
            _ => Err(Fault::AppendNotList),
        }
    }
}

/// The Python 3 name of a global a protocol 0-2 pickle names the Python 2 way
/// (`__builtin__.set` is `builtins.set`): the mapping `torch.load` applies
/// (`torch._utils.IMPORT_MAPPING` and `NAME_MAPPING`, a subset of `_compat_pickle`'s).
fn py2_name(module: String, name: String) -> (String, String) {
    const NAMES: &[(&str, &str, &str, &str)] = &[
        ("__builtin__", "xrange", "builtins", "range"),
        ("__builtin__", "reduce", "functools", "reduce"),
        ("__builtin__", "intern", "sys", "intern"),
        ("__builtin__", "unichr", "builtins", "chr"),
        ("__builtin__", "unicode", "builtins", "str"),
        ("__builtin__", "long", "builtins", "int"),
        ("__builtin__", "basestring", "builtins", "str"),
        ("itertools", "izip", "builtins", "zip"),
        ("itertools", "imap", "builtins", "map"),
        ("itertools", "ifilter", "builtins", "filter"),
        ("itertools", "ifilterfalse", "itertools", "filterfalse"),
        ("itertools", "izip_longest", "itertools", "zip_longest"),
        ("UserDict", "IterableUserDict", "collections", "UserDict"),
        ("UserDict", "UserDict", "collections", "UserDict"),
        ("UserList", "UserList", "collections", "UserList"),
        ("UserString", "UserString", "collections", "UserString"),
        ("exceptions", "StandardError", "builtins", "Exception"),
    ];
    const MODULES: &[(&str, &str)] = &[
        ("__builtin__", "builtins"),
        ("copy_reg", "copyreg"),
        ("Queue", "queue"),
        ("repr", "reprlib"),
        ("_abcoll", "collections.abc"),
        ("UserDict", "collections"),
        ("UserList", "collections"),
        ("UserString", "collections"),
        ("whichdb", "dbm"),
        ("StringIO", "io"),
        ("cStringIO", "io"),
    ];
    if let Some(&(_, _, m, n)) = NAMES.iter().find(|e| e.0 == module && e.1 == name) {
        return (m.to_string(), n.to_string());
    }
    match MODULES.iter().find(|e| e.0 == module) {
        Some(&(_, m)) => (m.to_string(), name),
        None => (module, name),
    }
}
