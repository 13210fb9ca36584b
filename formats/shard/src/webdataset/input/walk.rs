//! Walks tar headers the way Python's `tarfile` (webdataset's reader) does: V7, ustar
//! (name and prefix), old GNU, GNU long names (`L`), PAX extended headers (`x`: `path`,
//! `size`); base-256 numbers; either checksum (unsigned or signed). Unlike `tarfile`,
//! damage is an error with its byte offset, never a silent end: a bad checksum, a
//! header cut short, member data past the end of the file.

use std::io;

use super::bytes::TarBytes;

/// Tar block size.
pub(super) const BLOCK: u64 = 512;
const B: usize = BLOCK as usize;
/// Largest GNU long name or PAX record block read into memory.
pub(super) const MAX_META: u64 = 1 << 20;

/// What a member is, as far as sample grouping cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file (typeflag `0`, NUL or `7`).
    Regular,
    /// A directory: ignored, as webdataset ignores it.
    Directory,
    /// Anything else webdataset ignores (links, devices, FIFOs), by name.
    Other(&'static str),
    /// A type `tarfile` does not know: ignored too, but its data is skipped.
    Unknown(u8),
}

/// One member, its extension headers folded in.
#[derive(Debug)]
pub(super) struct Member {
    /// Offset of its first header block (an extension header's when it has one).
    pub start: u64,
    /// The full name, or the raw bytes when they are not UTF-8.
    pub name: Result<String, Vec<u8>>,
    pub kind: Kind,
    /// Offset of its data.
    pub data: u64,
    pub size: u64,
}

impl Member {
    /// The name for messages.
    pub fn shown(&self) -> String {
        match &self.name {
            Ok(name) => name.clone(),
            Err(raw) => String::from_utf8_lossy(raw).into_owned(),
        }
    }
}

/// Damage found while walking: where, and what.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct WalkError {
    pub at: u64,
    pub reason: String,
}

fn fail<T>(at: u64, reason: impl Into<String>) -> Result<T, WalkError> {
    Err(WalkError {
        at,
        reason: reason.into(),
    })
}

fn io_fail<T>(at: u64, e: io::Error) -> Result<T, WalkError> {
    fail(at, format!("cannot be read: {e}"))
}

pub(super) fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK).saturating_mul(BLOCK)
}

fn cstr(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A numeric header field: octal text (NUL/space padded, empty is 0) or GNU base-256.
pub(super) fn number(field: &[u8]) -> Option<u64> {
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

fn checksum_ok(block: &[u8; B]) -> bool {
    let Some(stored) = number(&block[148..156]) else {
        return false;
    };
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in block.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed)
}

/// `LEN key=value\n` records: the `path` and `size` they set.
fn pax(data: &[u8], at: u64) -> Result<(Option<Vec<u8>>, Option<u64>), WalkError> {
    let (mut path, mut size) = (None, None);
    let mut rest = cstr(data);
    while !rest.is_empty() {
        let bad = || fail(at, "has a malformed PAX extended header record");
        let Some(space) = rest.iter().position(|&b| b == b' ') else {
            return bad();
        };
        let Some(len) = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&len| len > space + 1 && len <= rest.len() && rest[len - 1] == b'\n')
        else {
            return bad();
        };
        let record = &rest[space + 1..len - 1];
        let Some(eq) = record.iter().position(|&b| b == b'=') else {
            return bad();
        };
        let (key, value) = (&record[..eq], &record[eq + 1..]);
        match key {
            b"path" => path = Some(value.to_vec()),
            b"size" => match std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                Some(n) => size = Some(n),
                None => return fail(at, "has a PAX `size` record that is not a number"),
            },
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok((path, size))
}

/// Walks the members of one tar from a given header offset.
pub(super) struct Walker {
    /// Offset of the next header.
    next: u64,
    /// The member before it (name, data offset, size), for a truncation message.
    last: Option<(String, u64, u64)>,
    done: bool,
}

impl Walker {
    /// A walk whose next header is at `start`.
    pub fn at(start: u64) -> Self {
        Self {
            next: start,
            last: None,
            done: false,
        }
    }

    /// Reads `size` bytes of metadata (a long name, PAX records) and its padding.
    fn meta(src: &mut dyn TarBytes, size: u64, at: u64, what: &str) -> Result<Vec<u8>, WalkError> {
        if size > MAX_META {
            return fail(
                at,
                format!("has a {what} of {size} bytes (more than {MAX_META} accepted)"),
            );
        }
        let mut data = vec![0u8; padded(size) as usize];
        let n = src.fill(&mut data).or_else(|e| io_fail(at, e))?;
        if n < size as usize {
            return fail(
                at,
                format!("is truncated: its {what} of {size} bytes ends after {n} bytes"),
            );
        }
        data.truncate(size as usize);
        Ok(data)
    }

    /// The next member, `None` at the end of the archive (a zero block, or the end of
    /// the file right after a member: tolerated, as every reader does).
    pub fn next(&mut self, src: &mut dyn TarBytes) -> Result<Option<Member>, WalkError> {
        if self.done {
            return Ok(None);
        }
        let pos = src.pos();
        if pos < self.next {
            let skipped = src.skip(self.next - pos).or_else(|e| io_fail(pos, e))?;
            if skipped < self.next - pos {
                self.done = true;
                if let Some((name, data, size)) = self.last.take()
                    && pos + skipped < data + size
                {
                    return fail(
                        data,
                        format!(
                            "is truncated: member `{name}` has {size} bytes of data from offset {data}, but the file ends at offset {}",
                            pos + skipped
                        ),
                    );
                }
                return Ok(None);
            }
        }
        let start = self.next;
        let (mut long_name, mut pax_path, mut pax_size) = (None, None, None);
        let mut extended = false;
        loop {
            let at = src.pos();
            let mut block = [0u8; B];
            let n = src.fill(&mut block).or_else(|e| io_fail(at, e))?;
            if n == 0 && !extended {
                self.done = true;
                return Ok(None);
            }
            if n < B && at == 0 {
                return fail(
                    0,
                    format!(
                        "is not a tar archive: it ends after {n} bytes, inside the first 512-byte tar header (offset 0)"
                    ),
                );
            }
            if n < B {
                return fail(
                    at,
                    format!(
                        "is truncated: the tar header at offset {at} ends after {n} of 512 bytes"
                    ),
                );
            }
            if block.iter().all(|&b| b == 0) {
                if extended {
                    return fail(at, "ends right after an extended header, before its member");
                }
                self.done = true;
                return Ok(None);
            }
            if !checksum_ok(&block) {
                return if at == 0 {
                    fail(
                        0,
                        "is not a tar archive: its first 512 bytes are not a tar header (bad header checksum at offset 0)",
                    )
                } else {
                    fail(
                        at,
                        format!("is corrupt: bad tar header checksum at offset {at}"),
                    )
                };
            }
            let Some(size) = number(&block[124..136]) else {
                return fail(
                    at,
                    format!("is corrupt: unreadable size field in the tar header at offset {at}"),
                );
            };
            let flag = block[156];
            match flag {
                b'L' => {
                    long_name = Some(cstr(&Self::meta(src, size, at, "GNU long name")?).to_vec());
                    extended = true;
                    continue;
                }
                b'x' | b'X' => {
                    let (path, size) = pax(&Self::meta(src, size, at, "PAX header")?, at)?;
                    pax_path = path.or(pax_path);
                    pax_size = size.or(pax_size);
                    extended = true;
                    continue;
                }
                b'K' | b'g' => {
                    // A long link target, global PAX records: nothing the grouping uses.
                    Self::meta(src, size, at, "tar extension header")?;
                    continue;
                }
                _ => {}
            }
            let name = if let Some(path) = pax_path.or(long_name) {
                path
            } else {
                let name = cstr(&block[..100]);
                let prefix = cstr(&block[345..500]);
                if &block[257..263] == b"ustar\0" && !prefix.is_empty() {
                    [prefix, b"/", name].concat()
                } else {
                    name.to_vec()
                }
            };
            let size = pax_size.unwrap_or(size);
            let kind = match flag {
                b'0' | b'7' => Kind::Regular,
                0 if name.ends_with(b"/") => Kind::Directory,
                0 => Kind::Regular,
                b'5' => Kind::Directory,
                b'1' => Kind::Other("a hard link"),
                b'2' => Kind::Other("a symbolic link"),
                b'3' | b'4' => Kind::Other("a device"),
                b'6' => Kind::Other("a FIFO"),
                b'S' => {
                    return fail(
                        at,
                        "holds a GNU sparse member, which is not supported; re-create the tar without --sparse",
                    );
                }
                other => Kind::Unknown(other),
            };
            // `tarfile` skips data only for regular and unknown members.
            let size = match kind {
                Kind::Regular | Kind::Unknown(_) => size,
                _ => 0,
            };
            let data = at + BLOCK;
            let Some(end) = data
                .checked_add(size)
                .filter(|e| e.checked_add(BLOCK).is_some())
            else {
                return fail(
                    at,
                    format!("is corrupt: member size {size} at offset {at} overflows"),
                );
            };
            let name = String::from_utf8(name).map_err(|e| e.into_bytes());
            let member = Member {
                start,
                name,
                kind,
                data,
                size,
            };
            if let Some(len) = src.len()
                && end > len
            {
                return fail(
                    data,
                    format!(
                        "is truncated: member `{}` has {size} bytes of data from offset {data}, but the file ends at offset {len}",
                        member.shown()
                    ),
                );
            }
            self.next = data + padded(size);
            self.last = Some((member.shown(), data, size));
            return Ok(Some(member));
        }
    }
}
