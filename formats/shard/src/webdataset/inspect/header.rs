//! The header checksum, read the way the readers read it.

use crate::webdataset::ustar::B;

pub(super) fn parse_octal(field: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(field).ok()?;
    let text = text.trim_matches(|c: char| c == ' ' || c == '\0');
    if text.is_empty() {
        return None;
    }
    u32::from_str_radix(text, 8).ok()
}

/// Unsigned sum of the header with the checksum field taken as spaces.
pub(super) fn header_sum(block: &[u8; B]) -> u32 {
    block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u32::from(b)
            }
        })
        .sum()
}

pub(super) fn checksum_ok(block: &[u8; B]) -> bool {
    parse_octal(&block[148..156]) == Some(header_sum(block))
}
