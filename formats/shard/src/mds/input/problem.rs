//! Why a stored value cannot be given as a field.

/// Why a value cannot be given.
#[derive(Debug)]
pub(crate) enum Problem {
    /// The stored bytes are not what the encoding stores (a damaged shard).
    Corrupt(String),
    /// The value is fine but has no lossless form our writers take (a `pil` mode PNG
    /// cannot hold): the sample is left out.
    Unsupported(String),
}

impl Problem {
    /// A damaged value, `why` as its text.
    pub(crate) fn corrupt(why: impl std::fmt::Display) -> Self {
        Problem::Corrupt(why.to_string())
    }
}
