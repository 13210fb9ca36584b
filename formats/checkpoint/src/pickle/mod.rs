//! A pickle reader that never executes anything.
//!
//! It runs the pickle opcodes over a symbolic machine: `GLOBAL` gives an inert
//! [`Node::Global`], `REDUCE`/`NEWOBJ`/`BUILD` give inert call and object nodes, and
//! persistent ids are kept as data. The result is a graph of [`Node`]s in an arena
//! (indices, not pointers: memo references and in-place `SETITEMS` behave as in Python,
//! cycles are harmless, and memory grows with the pickle's length, never with a length
//! it declares). Every global the pickle imports is listed, so callers can tell a
//! torch checkpoint from a pickle that would run code when loaded.

use std::collections::HashMap;

mod ops;
pub use ops::opcode_name;
#[cfg(test)]
mod tests;

/// Index of a node in [`Pickle::nodes`].
pub type Id = usize;

/// Longest text or bytes value kept in full; longer ones keep their length only.
const KEEP_BYTES: usize = 4096;

/// One value of the unpickled graph.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in i64.
    Int(i64),
    /// An integer too large for i64 (its byte length).
    BigInt(usize),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
    /// A bytes value: its length, and the bytes when short.
    Bytes(usize, Vec<u8>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A list.
    List(Vec<Id>),
    /// A dict, in insertion order.
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset.
    Set(Vec<Id>),
    /// An imported name (`module.name`), never imported here.
    Global(String, String),
    /// `callable(*args)`, never called here.
    Call(Id, Id),
    /// `cls.__new__(cls, *args)` followed by `BUILD state`.
    Object {
        /// The class (usually a [`Node::Global`]).
        class: Id,
        /// Constructor arguments.
        args: Id,
        /// State given by `BUILD`, if any.
        state: Option<Id>,
    },
    /// A persistent id (torch: a storage reference).
    PersId(Id),
}

/// A parsed pickle.
#[derive(Debug)]
pub struct Pickle {
    /// Every node created.
    pub nodes: Vec<Node>,
    /// The value returned by `STOP`.
    pub root: Id,
    /// Bytes the pickle took (a file may hold several pickles back to back).
    pub len: usize,
    /// Every `module.name` imported, in order of first use (Python 2 names mapped to
    /// their Python 3 ones below protocol 3, as `pickle` and `torch.load` map them).
    pub globals: Vec<String>,
    /// The first opcode `torch.load(weights_only=True)` does not run (it reads the
    /// protocol-2 subset torch writes), with its offset.
    pub weights_only_refuses: Option<(usize, u8)>,
}

/// Why a pickle could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickleError {
    /// Offset in the pickle where reading stopped.
    pub at: usize,
    /// What went wrong.
    pub reason: String,
    /// The data ended inside the pickle (more bytes could complete it).
    pub truncated: bool,
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at pickle offset {}", self.reason, self.at)
    }
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
    globals: Vec<String>,
    proto: u8,
    weights_only_refuses: Option<(usize, u8)>,
    truncated: bool,
}

type R<T> = Result<T, String>;

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let data: &'a [u8] = self.data;
        if n > data.len() - self.pos {
            self.truncated = true;
            return Err(format!(
                "needs {n} bytes but only {} remain: the pickle is truncated",
                data.len() - self.pos
            ));
        }
        let out = &data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self) -> R<u8> {
        Ok(self.take(1)?[0])
    }

    fn uint(&mut self, n: usize) -> R<u64> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn line(&mut self) -> R<&'a str> {
        let data: &'a [u8] = self.data;
        let rest = &data[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            self.truncated = true;
            return Err("text line without newline: the pickle is truncated".into());
        };
        self.pos += end + 1;
        std::str::from_utf8(&rest[..end]).map_err(|_| "text line is not UTF-8".to_string())
    }

    fn push_node(&mut self, node: Node) {
        let id = self.nodes.len();
        self.nodes.push(node);
        self.stack.push(id);
    }

    fn pop(&mut self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err("stack underflow".into());
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err("stack underflow".into());
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    fn pop_mark(&mut self) -> R<Vec<Id>> {
        let mark = self.marks.pop().ok_or("no MARK on the stack")?;
        Ok(self.stack.split_off(mark))
    }

    fn text(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| "string length overflows")?;
        let bytes = self.take(n)?;
        let s = String::from_utf8_lossy(bytes).into_owned();
        self.push_node(Node::Str(s));
        Ok(())
    }

    fn bytes(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| "bytes length overflows")?;
        let bytes = self.take(n)?;
        let kept = if n <= KEEP_BYTES {
            bytes.to_vec()
        } else {
            Vec::new()
        };
        self.push_node(Node::Bytes(n, kept));
        Ok(())
    }

    fn long(&mut self, n: u64) -> R<()> {
        let n = usize::try_from(n).map_err(|_| "integer length overflows")?;
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

    fn global(&mut self, module: String, name: String) {
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

    fn memo_put(&mut self, key: u64) -> R<()> {
        let top = self.top()?;
        self.memo.insert(key, top);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> R<()> {
        let id = *self
            .memo
            .get(&key)
            .ok_or_else(|| format!("memo key {key} was never stored"))?;
        self.stack.push(id);
        Ok(())
    }

    fn set_items(&mut self, target: Id, items: Vec<Id>) -> R<()> {
        if !items.len().is_multiple_of(2) {
            return Err("odd number of items for SETITEMS".into());
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
            _ => Err("SETITEMS on a value that is not a dict".into()),
        }
    }

    /// Merges `dict` into the item dict of a call/object node (wrapping a call in an
    /// object so the items have a place to live).
    fn attach_items(&mut self, target: Id, dict: Id) -> R<()> {
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

    fn append(&mut self, target: Id, items: Vec<Id>) -> R<()> {
        match &mut self.nodes[target] {
            Node::List(list) | Node::Set(list) => {
                list.extend(items);
                Ok(())
            }
            Node::Call(..) | Node::Object { .. } => Ok(()),
            _ => Err("APPEND on a value that is not a list".into()),
        }
    }
}

/// Reads one pickle from the start of `data` (which may continue after it).
pub fn parse(data: &[u8]) -> Result<Pickle, PickleError> {
    let mut m = Machine {
        data,
        pos: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        globals: Vec::new(),
        proto: 0,
        weights_only_refuses: None,
        truncated: false,
    };
    loop {
        let at = m.pos;
        match m.step() {
            Ok(true) => {}
            Ok(false) => break,
            Err(reason) => {
                return Err(PickleError {
                    at,
                    reason,
                    truncated: m.truncated,
                });
            }
        }
    }
    let root = m.stack.pop().ok_or(PickleError {
        at: m.pos,
        reason: "STOP with an empty stack".into(),
        truncated: false,
    })?;
    Ok(Pickle {
        nodes: m.nodes,
        root,
        len: m.pos,
        globals: m.globals,
        weights_only_refuses: m.weights_only_refuses,
    })
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

impl Pickle {
    /// The node `id`.
    pub fn node(&self, id: Id) -> &Node {
        &self.nodes[id]
    }

    /// The str at `id`, if it is one.
    pub fn str(&self, id: Id) -> Option<&str> {
        match &self.nodes[id] {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer at `id`, if it is one (bools count as 0/1).
    pub fn int(&self, id: Id) -> Option<i64> {
        match self.nodes[id] {
            Node::Int(v) => Some(v),
            Node::Bool(b) => Some(i64::from(b)),
            _ => None,
        }
    }

    /// Items of a tuple or list at `id`.
    pub fn items(&self, id: Id) -> Option<&[Id]> {
        match &self.nodes[id] {
            Node::Tuple(v) | Node::List(v) => Some(v),
            _ => None,
        }
    }

    /// `module.name` of a global at `id`.
    pub fn global_name(&self, id: Id) -> Option<String> {
        match &self.nodes[id] {
            Node::Global(m, n) => Some(format!("{m}.{n}")),
            _ => None,
        }
    }

    /// The entries of a dict, or of the dict state of an object (OrderedDict,
    /// argparse.Namespace, dataclasses).
    pub fn dict_entries(&self, id: Id) -> Option<&[(Id, Id)]> {
        match &self.nodes[id] {
            Node::Dict(entries) => Some(entries),
            Node::Object {
                state: Some(state), ..
            } => self.dict_entries(*state),
            _ => None,
        }
    }

    /// The value under the str key `key` of the dict (or object state) at `id`.
    pub fn get(&self, id: Id, key: &str) -> Option<Id> {
        self.dict_entries(id)?
            .iter()
            .find(|(k, _)| self.str(*k) == Some(key))
            .map(|(_, v)| *v)
    }

    /// Follows a path of str keys from the root.
    pub fn lookup(&self, path: &[&str]) -> Option<Id> {
        path.iter().try_fold(self.root, |id, key| self.get(id, key))
    }
}
