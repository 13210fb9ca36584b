//! Why an MDS compression or hash name names none.

/// Why a text names no MDS compression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompressionError {
    /// A family MDS does not know.
    #[error(
        "unknown compression `{0}`; use none, zstd[:LEVEL], gz[:LEVEL], bz2[:LEVEL], br[:LEVEL] or snappy"
    )]
    Unknown(String),
    /// A level given to a family without levels.
    #[error("`{0}` has no levels")]
    NoLevels(String),
    /// A level that is not a number.
    #[error("compression level `{0}` is not a number")]
    LevelSyntax(String),
    /// A level outside the family's range.
    #[error("{name} levels are {lo} to {hi}")]
    Level {
        /// The family.
        name: String,
        /// Lowest level.
        lo: u32,
        /// Highest level.
        hi: u32,
    },
}

/// A hash name MDS does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash `{name}`; known: {known}", known = known.join(", "))]
pub struct UnknownHash {
    /// The name given.
    pub name: String,
    /// The names MDS knows.
    pub known: &'static [&'static str],
}
