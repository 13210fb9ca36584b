//! Locating the zip archives of a file from its end: the end-of-central-directory
//! record, the zip64 records torch always writes, and the central directory, read with
//! a few small positioned reads before the sequential pass. A DCP `.distcp` file is a
//! concatenation of complete archives; walking back archive by archive (each one's
//! central directory says where it starts) delimits every one of them.
//!
//! Hand-written rather than a zip crate: verification must report *where* damage is,
//! accept CRC-0 members, and never trust a declared size for an allocation.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

const EOCD: &[u8; 4] = b"PK\x05\x06";
const LOCATOR: &[u8; 4] = b"PK\x06\x07";
const EOCD64: &[u8; 4] = b"PK\x06\x06";
const CENTRAL: &[u8; 4] = b"PK\x01\x02";
/// Largest central directory read (a torch checkpoint with 100k tensors has ~10 MB).
pub const MAX_CENTRAL: u64 = 256 << 20;
/// Longest tail searched for an end record with a comment.
const MAX_TAIL: u64 = 65_535 + 22;

/// One member as the central directory records it (offsets absolute in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Member name.
    pub name: String,
    /// Local header offset.
    pub header_at: u64,
    /// Stored (compressed) size.
    pub size: u64,
    /// CRC-32 of the uncompressed data.
    pub crc: u32,
    /// Compression method (0 = stored).
    pub method: u16,
    /// General-purpose flags (bit 3: data descriptor follows the data).
    pub flags: u16,
    /// Index of the archive in the file.
    pub archive: usize,
}

/// One zip archive inside a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archive {
    /// First byte of the archive.
    pub start: u64,
    /// First byte of its central directory.
    pub central: u64,
    /// One past its last byte.
    pub end: u64,
    /// Its members, in central-directory order.
    pub entries: Vec<Entry>,
}

/// Why the archives could not (all) be located.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Bytes `0..end` of the file are not covered by a located archive.
    pub end: u64,
    /// True when the end record is missing altogether (a cut-short file).
    pub no_end_record: bool,
    /// What is wrong.
    pub message: String,
}

/// Archives found, in file order, and the damage that stopped the walk, if any.
#[derive(Clone, Debug, Default)]
pub struct Located {
    /// Archives, first to last.
    pub archives: Vec<Archive>,
    /// What stopped the walk before reaching byte 0.
    pub damage: Option<Damage>,
}

fn read_at(file: &mut File, at: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// Where the data of the stored member `entry` starts: after its local header, whose
/// name and extra field lengths may differ from the central directory's.
pub fn data_start(file: &mut File, entry: &Entry) -> std::io::Result<u64> {
    let local = read_at(file, entry.header_at, 30)?;
    if &local[..4] != b"PK\x03\x04" {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "no local header at byte {} for `{}`",
                entry.header_at, entry.name
            ),
        ));
    }
    Ok(entry.header_at + 30 + u64::from(u16le(&local, 26)) + u64::from(u16le(&local, 28)))
}

fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Locates every archive of `file` (`len` bytes). With `many`, archives are expected
/// back to back from byte 0 (DCP); otherwise one archive that should start at 0.
pub fn locate(file: &mut File, len: u64, many: bool) -> Located {
    let mut out = Located::default();
    let mut end = len;
    while end > 0 {
        match archive_ending_at(file, end) {
            Ok(archive) => {
                end = archive.start;
                out.archives.push(archive);
                if !many {
                    break;
                }
            }
            Err(mut damage) => {
                damage.end = end;
                out.damage = Some(damage);
                break;
            }
        }
    }
    out.archives.reverse();
    let count = out.archives.len();
    for (i, archive) in out.archives.iter_mut().enumerate() {
        for e in &mut archive.entries {
            e.archive = i;
        }
    }
    if !many && out.damage.is_none() && count == 1 && out.archives[0].start > 0 {
        out.damage = Some(Damage {
            end: out.archives[0].start,
            no_end_record: false,
            message: format!(
                "{} bytes before the zip archive: readers that expect the archive at byte 0 fail",
                out.archives[0].start
            ),
        });
    }
    out
}

fn damage(message: String) -> Damage {
    Damage {
        end: 0,
        no_end_record: false,
        message,
    }
}

/// The archive whose end-of-central-directory record ends at `end`.
fn archive_ending_at(file: &mut File, end: u64) -> Result<Archive, Damage> {
    let io = |e: std::io::Error| damage(format!("read failed: {e}"));
    let (eocd_at, rec) = end_record(file, end)?;
    let count16 = u64::from(u16le(&rec, 10));
    let mut count = count16;
    let mut cd_size = u64::from(u32le(&rec, 12));
    let mut cd_offset = u64::from(u32le(&rec, 16));
    let mut cd_end = eocd_at;
    if eocd_at >= 20 + 56 {
        let loc = read_at(file, eocd_at - 20, 20).map_err(io)?;
        if &loc[..4] == LOCATOR {
            let z_at = eocd_at - 20 - 56;
            let z = read_at(file, z_at, 56).map_err(io)?;
            if &z[..4] != EOCD64 {
                return Err(damage(format!(
                    "the zip64 end record at byte {z_at} is damaged (bad signature)"
                )));
            }
            count = u64le(&z, 32);
            cd_size = u64le(&z, 40);
            cd_offset = u64le(&z, 48);
            cd_end = z_at;
        }
    }
    let central = cd_end.checked_sub(cd_size).ok_or_else(|| {
        damage(format!(
            "the end record declares a {cd_size}-byte central directory, more than the {cd_end} bytes before it"
        ))
    })?;
    let start = central.checked_sub(cd_offset).ok_or_else(|| {
        damage(format!(
            "the end record puts the central directory at offset {cd_offset}, past byte {central} where it is"
        ))
    })?;
    if cd_size > MAX_CENTRAL {
        return Err(damage(format!(
            "central directory of {cd_size} bytes exceeds the {MAX_CENTRAL}-byte limit of this reader"
        )));
    }
    if count > cd_size / 46 {
        return Err(damage(format!(
            "the end record declares {count} members, more than a {cd_size}-byte central directory can hold"
        )));
    }
    let cd = read_at(file, central, cd_size).map_err(io)?;
    let entries = parse_central(&cd, central, start)?;
    if entries.len() as u64 != count && count16 != 0xffff {
        return Err(damage(format!(
            "the end record declares {count} members but the central directory at byte {central} holds {}",
            entries.len()
        )));
    }
    Ok(Archive {
        start,
        central,
        end,
        entries,
    })
}

/// The end-of-central-directory record of the archive ending at `end` (at the very end,
/// or followed by its comment), and where it starts.
fn end_record(file: &mut File, end: u64) -> Result<(u64, Vec<u8>), Damage> {
    let io = |e: std::io::Error| damage(format!("read failed: {e}"));
    if end < 22 {
        return Err(Damage {
            no_end_record: true,
            ..damage(format!("{end} bytes cannot hold a zip end record"))
        });
    }
    let eocd_at = end - 22;
    let rec = read_at(file, eocd_at, 22).map_err(io)?;
    if &rec[..4] != EOCD || u16le(&rec, 20) != 0 {
        let span = end.min(MAX_TAIL);
        let tail = read_at(file, end - span, span).map_err(io)?;
        let found = (0..tail.len().saturating_sub(21)).rev().find(|&i| {
            &tail[i..i + 4] == EOCD && i + 22 + usize::from(u16le(&tail, i + 20)) == tail.len()
        });
        let Some(i) = found else {
            return Err(Damage {
                no_end_record: true,
                ..damage(
                    "no end-of-central-directory record at the end: the file was cut short (an interrupted save or partial copy) or its end was overwritten (\"failed finding central directory\")".into(),
                )
            });
        };
        return Ok((end - span + i as u64, tail[i..i + 22].to_vec()));
    }
    Ok((eocd_at, rec))
}

fn parse_central(cd: &[u8], central: u64, start: u64) -> Result<Vec<Entry>, Damage> {
    let mut entries = Vec::new();
    let mut i = 0usize;
    while i < cd.len() {
        let at = central + i as u64;
        if cd.len() - i < 46 || &cd[i..i + 4] != CENTRAL {
            return Err(damage(format!(
                "central directory entry at byte {at} is damaged (bad signature)"
            )));
        }
        let h = &cd[i..i + 46];
        let (n, e, c) = (
            usize::from(u16le(h, 28)),
            usize::from(u16le(h, 30)),
            usize::from(u16le(h, 32)),
        );
        if cd.len() - i - 46 < n + e + c {
            return Err(damage(format!(
                "central directory entry at byte {at} runs past the directory"
            )));
        }
        let name = String::from_utf8_lossy(&cd[i + 46..i + 46 + n]).into_owned();
        let mut size = u64::from(u32le(h, 20));
        let mut usize_ = u64::from(u32le(h, 24));
        let mut offset = u64::from(u32le(h, 42));
        let mut extra = &cd[i + 46 + n..i + 46 + n + e];
        while extra.len() >= 4 {
            let (id, len) = (u16le(extra, 0), usize::from(u16le(extra, 2)));
            let body = &extra[4..(4 + len).min(extra.len())];
            if id == 1 {
                let mut fields = body.chunks_exact(8).map(|c| u64le(c, 0));
                for slot in [&mut usize_, &mut size, &mut offset] {
                    if *slot == 0xffff_ffff {
                        *slot = fields.next().unwrap_or(*slot);
                    }
                }
            }
            extra = &extra[(4 + len).min(extra.len())..];
        }
        let header_at = start.checked_add(offset).ok_or_else(|| {
            damage(format!(
                "central directory entry at byte {at} has an offset that overflows"
            ))
        })?;
        entries.push(Entry {
            name,
            header_at,
            size,
            crc: u32le(h, 16),
            method: u16le(h, 10),
            flags: u16le(h, 8),
            archive: 0,
        });
        i += 46 + n + e + c;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A stored zip in the layout torch writes (data descriptors, zip64 end records).
    pub fn zip(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cd = Vec::new();
        for (name, data) in members {
            let offset = out.len() as u32;
            let crc = crc32fast::hash(data);
            out.extend_from_slice(b"PK\x03\x04\x14\x00\x08\x08\x00\x00\x00\x00\x00\x00");
            out.extend_from_slice(&[0u8; 12]);
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(data);
            out.extend_from_slice(b"PK\x07\x08");
            out.extend_from_slice(&crc.to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            cd.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x08\x08\x00\x00\x00\x00\x00\x00");
            cd.extend_from_slice(&crc.to_le_bytes());
            cd.extend_from_slice(&(data.len() as u32).to_le_bytes());
            cd.extend_from_slice(&(data.len() as u32).to_le_bytes());
            cd.extend_from_slice(&(name.len() as u16).to_le_bytes());
            cd.extend_from_slice(&[0u8; 12]);
            cd.extend_from_slice(&offset.to_le_bytes());
            cd.extend_from_slice(name.as_bytes());
        }
        let cd_at = out.len() as u64;
        out.extend_from_slice(&cd);
        let z_at = out.len() as u64;
        out.extend_from_slice(b"PK\x06\x06");
        out.extend_from_slice(&44u64.to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
        for v in [
            members.len() as u64,
            members.len() as u64,
            cd.len() as u64,
            cd_at,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(b"PK\x06\x07\0\0\0\0");
        out.extend_from_slice(&z_at.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(
            b"PK\x05\x06\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\0\0",
        );
        out
    }

    fn located(bytes: &[u8], many: bool) -> Located {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        locate(&mut f, bytes.len() as u64, many)
    }

    #[test]
    fn one_archive_and_a_concatenation() {
        let a = zip(&[("a/data.pkl", b"xyz"), ("a/data/0", &[7u8; 100])]);
        let one = located(&a, false);
        assert!(one.damage.is_none(), "{:?}", one.damage);
        assert_eq!(one.archives.len(), 1);
        assert_eq!(one.archives[0].entries[1].name, "a/data/0");
        assert_eq!(one.archives[0].entries[1].size, 100);
        let b = zip(&[("archive/data.pkl", b"q")]);
        let both: Vec<u8> = [a.clone(), b.clone(), a.clone()].concat();
        let many = located(&both, true);
        assert!(many.damage.is_none(), "{:?}", many.damage);
        let starts: Vec<u64> = many.archives.iter().map(|a| a.start).collect();
        assert_eq!(starts, [0, a.len() as u64, (a.len() + b.len()) as u64]);
        assert_eq!(many.archives[2].entries[0].header_at, starts[2]);
        assert_eq!(many.archives[2].entries[0].archive, 2);
    }

    #[test]
    fn truncation_and_damage_are_reported() {
        let a = zip(&[("a/data.pkl", b"xyz"), ("a/data/0", &[7u8; 100])]);
        let cut = located(&a[..a.len() - 10], false);
        assert!(cut.damage.unwrap().no_end_record);
        let mut bad = a.clone();
        let cd = bad.len() - 98 - 46 - 8;
        bad[cd] = 0;
        let d = located(&bad, false).damage.unwrap();
        assert!(
            d.message.contains("central directory entry"),
            "{}",
            d.message
        );
        let mut huge = a.clone();
        let n = huge.len();
        huge[n - 98 + 40..n - 98 + 48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let d = located(&huge, false).damage.unwrap();
        assert!(d.message.contains("more than the"), "{}", d.message);
    }
}
