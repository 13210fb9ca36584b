//! Sizes of the ustar format that writer and inspectors share.

/// Tar block size.
pub const BLOCK: u64 = 512;
/// Longest member name both readers key correctly (wids reads only the name field).
pub const MAX_NAME: usize = 100;
/// Largest member the 11-digit octal size field holds.
pub const MAX_MEMBER: u64 = (1 << 33) - 1;
