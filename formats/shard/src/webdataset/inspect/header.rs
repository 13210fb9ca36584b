//! Raw ustar header fields and PAX records, read the way the readers read them.

use crate::webdataset::ustar::BLOCK;

/// Tar block size, as a length.
pub(super) const B: usize = BLOCK as usize;

pub(super) fn cstr(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

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

/// `LEN key=value\n` records of a PAX extended header.
pub(super) fn pax_records(data: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let Some(space) = rest.iter().position(|&b| b == b' ') else {
            break;
        };
        let Some(len) = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            break;
        };
        if len <= space || len > rest.len() {
            break;
        }
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(eq) = record.iter().position(|&b| b == b'=') {
            out.push((
                String::from_utf8_lossy(&record[..eq]).into_owned(),
                String::from_utf8_lossy(&record[eq + 1..]).into_owned(),
            ));
        }
        rest = &rest[len..];
    }
    out
}
