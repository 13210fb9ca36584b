//! The gzip member's header (RFC 1952), read the way Python's `tarfile` reads it (all
//! optional fields skipped) and checked where it can be (the method, the header CRC).

/// Longest gzip header accepted (its extra field, file name and comment included).
pub(super) const MAX_GZ_HEADER: usize = 256 << 10;

/// One step of reading the gzip header (RFC 1952), which is collected whole (it starts
/// at byte 0, so offsets in it are file offsets): the input bytes used and whether the
/// header is complete (the deflate data starts with the next byte).
pub(super) fn gz_header(buf: &mut Vec<u8>, data: &[u8]) -> Result<(usize, bool), (u64, String)> {
    let take = (MAX_GZ_HEADER - buf.len()).min(data.len());
    buf.extend_from_slice(&data[..take]);
    match parse_gz_header(buf)? {
        Some(len) => Ok((take - (buf.len() - len), true)),
        None if buf.len() == MAX_GZ_HEADER => Err((
            0,
            format!(
                "the gzip header is longer than {MAX_GZ_HEADER} bytes (a file name or comment that never ends)"
            ),
        )),
        None => Ok((take, false)),
    }
}

/// The length of a complete gzip header at the start of `buf`, `None` while incomplete.
fn parse_gz_header(buf: &[u8]) -> Result<Option<usize>, (u64, String)> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if buf.len() < 10 {
        return Ok(None);
    }
    if buf[2] != 8 {
        return Err((
            2,
            format!("the gzip compression method is {}, not deflate (8)", buf[2]),
        ));
    }
    let flags = buf[3];
    let mut len = 10;
    if flags & FEXTRA != 0 {
        let Some(xlen) = buf.get(len..len + 2) else {
            return Ok(None);
        };
        len += 2 + usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let Some(nul) = buf
                .get(len..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
            else {
                return Ok(None);
            };
            len += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        let Some(stored) = buf.get(len..len + 2) else {
            return Ok(None);
        };
        let crc = crc32fast::hash(&buf[..len]) as u16;
        if u16::from_le_bytes([stored[0], stored[1]]) != crc {
            return Err((
                len as u64,
                "the gzip header's CRC-16 differs: the header is damaged".into(),
            ));
        }
        len += 2;
    }
    Ok((buf.len() >= len).then_some(len))
}
