//! Why the symbolic machine stopped reading a pickle (the offset is [`super::PickleError`]'s).

/// Why the symbolic machine stopped reading a pickle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// An opcode's argument runs past the end of the data.
    #[error("needs {need} bytes but only {remain} remain: the pickle is truncated")]
    Truncated {
        /// Bytes the argument needs.
        need: usize,
        /// Bytes left in the data.
        remain: usize,
    },
    /// A text argument without its newline.
    #[error("text line without newline: the pickle is truncated")]
    UnendedLine,
    /// A text argument that is not UTF-8.
    #[error("text line is not UTF-8")]
    LineNotUtf8,
    /// A pop from an empty stack.
    #[error("stack underflow")]
    StackUnderflow,
    /// An opcode that reads back to a MARK, without one.
    #[error("no MARK on the stack")]
    NoMark,
    /// A declared length (of a `string`, `bytes` or `integer`) beyond the address space.
    #[error("{0} length overflows")]
    LengthOverflows(&'static str),
    /// A memo GET of a key never PUT.
    #[error("memo key {0} was never stored")]
    MemoMissing(u64),
    /// SETITEMS or DICT with a key without its value.
    #[error("odd number of items for {0}")]
    OddItems(&'static str),
    /// SETITEMS on something else than a dict.
    #[error("SETITEMS on a value that is not a dict")]
    SetItemsNotDict,
    /// APPEND on something else than a list.
    #[error("APPEND on a value that is not a list")]
    AppendNotList,
    /// A PROTO opcode beyond protocol 5.
    #[error("unsupported pickle protocol {0}")]
    Protocol(u8),
    /// STACK_GLOBAL whose module and name are not strings.
    #[error("STACK_GLOBAL needs two strings")]
    StackGlobal,
    /// OBJ with nothing after its MARK.
    #[error("OBJ without a class")]
    ObjWithoutClass,
    /// A PUT or GET whose text key is no integer.
    #[error("bad {0} key")]
    BadKey(&'static str),
    /// A byte that is no opcode this reader accepts.
    #[error("opcode 0x{0:02x} is not a pickle opcode this reader accepts")]
    Opcode(u8),
    /// STOP with nothing to return.
    #[error("STOP with an empty stack")]
    EmptyStop,
}
