//! What a torch pickle holds, as `read::contents` finds it: the storages, each
//! tensor's view of its storage and what is wrong with it, the globals judged, the
//! values that are not tensors and the scalar facts of the layout checks.

use std::collections::BTreeMap;

use serde_json::Value;

use super::graph::Entry;
use crate::values::TensorDtype;

/// A storage as the pickle declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Record key (`0`, `1`, ...): the member `data/<key>`.
    pub key: String,
    /// Element type of the storage (bytes for untyped storages).
    pub dtype: Option<TensorDtype>,
    /// Bytes the storage holds, as declared.
    pub bytes: Option<u64>,
    /// Names of the tensors that live in it (one per tensor, aliases left out).
    pub tensors: Vec<String>,
    /// Where it was saved from (`cpu`, `cuda:0`).
    pub location: String,
    /// An `UntypedStorage`: its element count (in the pickle and in a legacy file) is
    /// in bytes.
    pub untyped: bool,
    /// Elements the pickle declares (bytes for an untyped storage).
    pub numel: Option<u64>,
}

/// What is wrong with a tensor's view of its storage.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Its element type is not one shardsmith knows: it cannot be checked.
    UnknownDtype(String),
    /// Its offset, shape or strides do not describe a view torch builds.
    Geometry(String),
    /// The view runs past the end of its storage (in elements).
    Overrun {
        /// Elements the view needs.
        needs: u64,
        /// Elements the storage declares.
        has: u64,
    },
}

impl Fault {
    /// The fault in words, about tensor `name` of storage `key`.
    pub fn message(&self, name: &str, key: &str) -> String {
        match self {
            Fault::UnknownDtype(what) => format!(
                "tensor `{name}` has the element type {what}, which shardsmith does not know: its view of storage `{key}` was not checked"
            ),
            Fault::Geometry(why) => format!("tensor `{name}`: {why}"),
            Fault::Overrun { needs, has } => format!(
                "tensor `{name}` needs {needs} elements of storage `{key}`, which has {has}: its view runs past the data"
            ),
        }
    }
}

/// A tensor as its rebuild call describes it.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Dotted name (`model.layers.0.w`), or `<tensor N>` when unreachable from the root.
    pub name: String,
    /// The other names the same tensor object is returned under (`{'a': t, 'b': t}`,
    /// tied weights), in the order reached.
    pub aliases: Vec<String>,
    /// Element type, when known.
    pub dtype: Option<TensorDtype>,
    /// Shape (dimensions that are not non-negative integers left out: see `fault`).
    pub shape: Vec<u64>,
    /// Record key of its storage (the member `data/<key>`).
    pub storage: String,
    /// First element in the storage, when a non-negative integer.
    pub offset: Option<u64>,
    /// Stride of each dimension in elements, when all are non-negative integers.
    pub stride: Option<Vec<u64>>,
    /// What is wrong with the view, if anything.
    pub fault: Option<Fault>,
}

impl View {
    /// Every name the tensor is returned under: `name`, then the aliases.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.name).chain(&self.aliases)
    }
}

/// What a torch pickle holds.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    /// Storages by key (those of tensors, and storages saved on their own).
    pub storages: BTreeMap<String, Storage>,
    /// Number of tensor objects.
    pub tensors: usize,
    /// Every name a tensor is returned under, in the order found.
    pub names: Vec<String>,
    /// Each tensor object as its rebuild call describes it, in the same order.
    pub views: Vec<View>,
    /// Storages referenced with different sizes by different tensors.
    pub conflicts: Vec<String>,
    /// Globals `torch.load(weights_only=True)` refuses that run no code of their own.
    pub inert: Vec<String>,
    /// Globals of training frameworks (loading needs them and `weights_only=False`).
    pub framework: Vec<String>,
    /// Globals that would run arbitrary code when loaded.
    pub unsafe_globals: Vec<String>,
    /// The first opcode `weights_only=True` refuses, with its offset in the pickle.
    pub weights_only_refuses: Option<(usize, u8)>,
    /// Scalar facts for layout checks.
    pub facts: BTreeMap<String, Value>,
    /// Rebuild functions of tensors that are not plain strided views of one storage
    /// (quantized, sparse, nested, subclass wrappers): their values are not in `views`.
    pub other_rebuilds: Vec<String>,
    /// The values that are not tensors (ints, floats, strings, ...), by dotted name.
    pub entries: Vec<Entry>,
    /// Tensors that are not plain strided views (quantized, sparse, ...): name and
    /// rebuild function. Their views are not checked, and `ls` and `diff` refuse them.
    pub other_tensors: Vec<(String, String)>,
    /// The name walk stopped at its budget: names past it are missing.
    pub names_truncated: bool,
}
