//! The values of the unpickled graph.

/// Index of a node in [`Pickle::nodes`].
pub type Id = usize;

/// Longest text or bytes value kept in full; longer ones keep their length only.
pub(super) const KEEP_BYTES: usize = 4096;

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
