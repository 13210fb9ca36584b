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

mod fault;
mod machine;
mod node;
mod ops;
use fault::Fault;
pub use node::{Id, Node};
pub use ops::opcode_name;
#[cfg(test)]
mod tests;

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
#[derive(Clone, PartialEq, Eq)]
pub struct PickleError {
    /// Offset in the pickle where reading stopped.
    pub at: usize,
    /// What went wrong.
    pub reason: Fault,
    /// The data ended inside the pickle (more bytes could complete it).
    pub truncated: bool,
}

/// The reason shown as the words it says (some callers' messages print this `Debug`
/// form: `PickleError { at: 7, reason: "stack underflow", truncated: false }`).
impl std::fmt::Debug for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PickleError")
            .field("at", &self.at)
            .field("reason", &self.reason.to_string())
            .field("truncated", &self.truncated)
            .finish()
    }
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at pickle offset {}", self.reason, self.at)
    }
}

/// Reads one pickle from the start of `data` (which may continue after it).
pub fn parse(data: &[u8]) -> Result<Pickle, PickleError> {
    let mut m = machine::Machine {
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
        reason: Fault::EmptyStop,
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
