//! Sizes and the fields of a tar header block.

/// Tar block size.
pub const BLOCK: u64 = 512;
/// Longest member name both readers key correctly (wids reads only the name field).
pub const MAX_NAME: usize = 100;
/// Largest member the 11-digit octal size field holds.
pub const MAX_MEMBER: u64 = (1 << 33) - 1;
/// Tar block size, as a length.
pub(crate) const B: usize = BLOCK as usize;
/// Largest GNU long name or PAX header read into memory (the walks refuse or skip
/// larger ones, by name).
pub(crate) const MAX_META: u64 = 1 << 20;

/// The bytes of a NUL-terminated header field, up to the first NUL.
pub(crate) fn cstr(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A numeric header field as `tarfile`'s `nti` reads it: octal text up to the first
/// NUL, spaces around it, empty meaning 0; or GNU base-256 (first byte `0x80`; `0xff`,
/// a negative number, is refused). `None` when it is neither.
pub(crate) fn number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        if field[0] == 0xff {
            return None;
        }
        let mut n: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            n = n.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(n);
    }
    let text = std::str::from_utf8(cstr(field)).ok()?.trim_matches(' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}
