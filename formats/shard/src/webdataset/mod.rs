//! WebDataset tar shards, written so that `webdataset` 1.0.2 and `wids` 0.1.11 read
//! exactly the input: plain ustar members (typeflag `0`, name ≤ 100 bytes in the name
//! field, no prefix, no PAX or GNU records), fixed header fields (mode 0444, uid/gid 0,
//! user and group `bigdata`, mtime 0), a sample's files contiguous and sorted by field,
//! and two zero blocks at the end. Optionally compressed as a whole (`.tar.gz`,
//! `.tar.zst`: [`compress`]); sizes and rollover always count the uncompressed tar.

pub mod compress;
pub mod def;
pub mod input;
mod inspect;
mod unpack;
mod ustar;

use std::collections::BTreeMap;
use std::io::{self, Write};

pub use compress::TarCompression;
pub use inspect::TarInspector;
pub use unpack::ShardInspector;
pub use ustar::{BLOCK, MAX_MEMBER, MAX_NAME};

use self::compress::Compressor;
use crate::format::{Field, Payload, ShardEncoder, ShardFormat, ShardOut};
use crate::sample::SampleSpec;

/// The WebDataset format: plain or compressed tar shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebDataset {
    /// Compression of whole shards (`None`: plain `.tar`).
    pub compression: Option<TarCompression>,
}

impl WebDataset {
    /// Plain `.tar` shards.
    pub const PLAIN: WebDataset = WebDataset { compression: None };
}

fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK) * BLOCK
}

impl ShardFormat for WebDataset {
    fn name(&self) -> &'static str {
        "webdataset"
    }

    fn shard_name(&self, prefix: &str, index: usize) -> String {
        let ext = self.compression.map_or("tar", |c| c.extension());
        format!("{prefix}-{index:06}.{ext}")
    }

    fn refuse(&self, sample: &SampleSpec) -> Option<String> {
        // Keys from a file tree are valid by construction; keys from other sources (a
        // Parquet key column) must split back the same way when readers read `key.field`.
        match crate::naming::split_key(&format!("{}.x", sample.key)) {
            Ok((key, _)) if key == sample.key && !sample.key.split('/').any(str::is_empty) => {}
            _ => {
                return Some(format!(
                    "key `{}` would be read back differently (a dot in its last part, an empty part, a leading dot or a `__x__` part)",
                    sample.key
                ));
            }
        }
        for field in &sample.fields {
            let name_len = sample.key.len() + 1 + field.ext.len();
            if name_len > MAX_NAME {
                return Some(format!(
                    "member name `{}.{}` is {name_len} bytes: wids reads only the 100-byte ustar name field and would mis-key it; shorten the path",
                    sample.key, field.ext
                ));
            }
            if field.size > MAX_MEMBER {
                return Some(format!(
                    "field `{}` is {} bytes: a ustar member holds at most 8 GiB without extensions wids cannot read",
                    field.ext, field.size
                ));
            }
        }
        None
    }

    fn sample_bytes(&self, sample: &SampleSpec) -> u64 {
        sample.fields.iter().map(|f| BLOCK + padded(f.size)).sum()
    }

    fn shard_overhead(&self) -> u64 {
        2 * BLOCK
    }

    /// Only a compressed dataset records its compression: plain datasets keep the
    /// manifest (and root digest) they had before compression existed.
    fn options(&self) -> BTreeMap<String, serde_json::Value> {
        let mut options = BTreeMap::new();
        if let Some(compression) = self.compression {
            options.insert("compression".into(), compression.name().into());
        }
        options
    }

    fn encoder(&self) -> Box<dyn ShardEncoder> {
        Box::new(TarEncoder {
            compression: self.compression,
            compressor: None,
        })
    }
}

/// Writes the tar, straight into the shard's output or through a compressor in front
/// of it (made on first use, from a handle on the output).
struct TarEncoder {
    compression: Option<TarCompression>,
    compressor: Option<Compressor>,
}

impl TarEncoder {
    fn sink<'a>(&'a mut self, out: &'a mut ShardOut) -> io::Result<&'a mut dyn Write> {
        let Some(compression) = self.compression else {
            return Ok(out);
        };
        if self.compressor.is_none() {
            self.compressor = Some(compression.writer(out.clone())?);
        }
        Ok(self.compressor.as_mut().expect("made above"))
    }
}

/// The deterministic ustar header of a member.
pub fn member_header(name: &str, size: u64) -> io::Result<tar::Header> {
    let mut header = tar::Header::new_ustar();
    if name.len() > MAX_NAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("member name `{name}` is over 100 bytes"),
        ));
    }
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_size(size);
    header.set_mode(0o444);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_username("bigdata")?;
    header.set_groupname("bigdata")?;
    header.set_device_major(0)?;
    header.set_device_minor(0)?;
    header.set_cksum();
    Ok(header)
}

const ZEROS: [u8; BLOCK as usize] = [0; BLOCK as usize];

/// Writes a member's header: [`member_header`]'s, after a GNU long-name record
/// (`././@LongLink`, what GNU tar and Python's tarfile write and read) when `name` is over
/// 100 bytes. Shards never need the record (their names are refused first); `cat`'s tar
/// of one sample can, and writes through this too.
pub fn write_member_header(out: &mut dyn Write, name: &str, size: u64) -> io::Result<()> {
    if name.len() > MAX_NAME {
        let mut long = name.as_bytes().to_vec();
        long.push(0);
        let mut record = member_header("././@LongLink", long.len() as u64)?;
        record.set_entry_type(tar::EntryType::GNULongName);
        record.set_cksum();
        out.write_all(record.as_bytes())?;
        out.write_all(&long)?;
        write_padding(out, long.len() as u64)?;
        let mut cut = MAX_NAME;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        return out.write_all(member_header(&name[..cut], size)?.as_bytes());
    }
    out.write_all(member_header(name, size)?.as_bytes())
}

/// The zeros that end a member of `size` bytes on a block boundary.
pub fn write_padding(out: &mut dyn Write, size: u64) -> io::Result<()> {
    out.write_all(&ZEROS[..(padded(size) - size) as usize])
}

impl ShardEncoder for TarEncoder {
    fn add(&mut self, out: &mut ShardOut, key: &str, fields: &mut [Field<'_>]) -> io::Result<()> {
        let out = self.sink(out)?;
        for field in fields {
            let name = format!("{key}.{}", field.ext);
            write_member_header(out, &name, field.size)?;
            match &mut field.payload {
                Payload::Bytes(bytes) => out.write_all(bytes)?,
                Payload::Stream(reader) => {
                    let copied = io::copy(&mut io::Read::take(&mut **reader, field.size), out)?;
                    if copied != field.size {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!("`{name}` ended after {copied} of {} bytes", field.size),
                        ));
                    }
                }
            }
            write_padding(out, field.size)?;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut ShardOut) -> io::Result<serde_json::Value> {
        let out = self.sink(out)?;
        out.write_all(&ZEROS)?;
        out.write_all(&ZEROS)?;
        if let Some(compressor) = self.compressor.take() {
            compressor.finish()?;
        }
        Ok(serde_json::Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::FieldSpec;

    fn spec(key: &str, sizes: &[(&str, u64)]) -> SampleSpec {
        SampleSpec {
            origin: 0,
            key: key.into(),
            fields: sizes
                .iter()
                .map(|(ext, size)| FieldSpec::new(ext, *size))
                .collect(),
        }
    }

    #[test]
    fn sizes_are_exact() {
        let s = spec("k", &[("jpg", 0), ("json", 1), ("txt", 512), ("cls", 513)]);
        assert_eq!(
            WebDataset::PLAIN.sample_bytes(&s),
            4 * 512 + 512 + 512 + 1024
        );
        let (mut out, bytes) = crate::format::ShardOut::memory();
        let mut enc = WebDataset::PLAIN.encoder();
        let data: Vec<Vec<u8>> = s
            .fields
            .iter()
            .map(|f| vec![7u8; f.size as usize])
            .collect();
        let mut fields: Vec<Field<'_>> = s
            .fields
            .iter()
            .zip(&data)
            .map(|(f, d)| Field {
                ext: &f.ext,
                size: f.size,
                payload: Payload::Bytes(d),
            })
            .collect();
        enc.add(&mut out, &s.key, &mut fields).unwrap();
        enc.finish(&mut out).unwrap();
        let out = bytes.lock().unwrap().clone();
        assert_eq!(
            out.len() as u64,
            WebDataset::PLAIN.sample_bytes(&s) + WebDataset::PLAIN.shard_overhead()
        );
        let mut archive = tar::Archive::new(&out[..]);
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["k.jpg", "k.json", "k.txt", "k.cls"]);
    }

    #[test]
    fn compressed_shards_are_named_sized_and_recorded_as_the_tar_inside() {
        let s = spec("k", &[("jpg", 700), ("json", 3)]);
        for (compression, name, recorded) in [
            (TarCompression::Gz(6), "p-000007.tar.gz", "gz:6"),
            (TarCompression::Zstd(19), "p-000007.tar.zst", "zstd:19"),
        ] {
            let format = WebDataset {
                compression: Some(compression),
            };
            assert_eq!(format.shard_name("p", 7), name);
            assert_eq!(format.options()["compression"], recorded);
            assert_eq!(
                format.sample_bytes(&s),
                WebDataset::PLAIN.sample_bytes(&s),
                "sizes count the uncompressed tar"
            );
            let (mut out, bytes) = crate::format::ShardOut::memory();
            let mut enc = format.encoder();
            let data = [vec![7u8; 700], b"{}\n".to_vec()];
            let mut fields: Vec<Field<'_>> = s
                .fields
                .iter()
                .zip(&data)
                .map(|(f, d)| Field {
                    ext: &f.ext,
                    size: f.size,
                    payload: Payload::Bytes(d),
                })
                .collect();
            enc.add(&mut out, &s.key, &mut fields).unwrap();
            enc.finish(&mut out).unwrap();
            drop(enc);
            let shard = bytes.lock().unwrap().clone();
            let mut tar = Vec::new();
            match compression {
                TarCompression::Gz(_) => {
                    io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&shard[..]), &mut tar)
                }
                TarCompression::Zstd(_) => io::Read::read_to_end(
                    &mut zstd::stream::read::Decoder::new(&shard[..]).unwrap(),
                    &mut tar,
                ),
            }
            .unwrap();
            assert_eq!(
                tar.len() as u64,
                format.sample_bytes(&s) + format.shard_overhead()
            );
            assert_eq!(
                tar[..512],
                member_header("k.jpg", 700).unwrap().as_bytes()[..]
            );
        }
        assert!(
            WebDataset::PLAIN.options().is_empty(),
            "plain manifests are unchanged"
        );
        assert_eq!(WebDataset::PLAIN.shard_name("p", 7), "p-000007.tar");
    }

    #[test]
    fn header_is_plain_deterministic_ustar() {
        let h = member_header("a/b.jpg", 5).unwrap();
        let raw = h.as_bytes();
        assert_eq!(&raw[257..265], b"ustar\x0000");
        assert_eq!(raw[156], b'0');
        assert_eq!(&raw[100..107], b"0000444");
        assert!(
            raw[345..500].iter().all(|&b| b == 0),
            "prefix field must stay empty"
        );
        assert_eq!(&raw[265..272], b"bigdata");
        assert_eq!(
            h.cksum().unwrap(),
            raw.iter()
                .enumerate()
                .map(|(i, &b)| if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(b)
                })
                .sum::<u32>()
        );
        assert!(member_header(&"x".repeat(101), 1).is_err());
    }

    #[test]
    fn member_headers_hold_long_names_and_any_size() {
        use std::io::Read;
        let long = format!("{}/x.txt", "d".repeat(120));
        let mut out = Vec::new();
        write_member_header(&mut out, &long, 3).unwrap();
        out.extend_from_slice(b"abc");
        write_padding(&mut out, 3).unwrap();
        out.extend_from_slice(&[0; 1024]);
        assert_eq!(out.len() % BLOCK as usize, 0);
        let mut archive = tar::Archive::new(&out[..]);
        let mut entries = archive.entries().unwrap();
        let mut entry = entries.next().unwrap().unwrap();
        assert_eq!(entry.path().unwrap().to_str().unwrap(), long);
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        assert_eq!(text, "abc");
        drop(entry);
        assert!(entries.next().is_none());
        // 8 GiB and more: GNU base-256, as GNU tar writes it.
        let mut big = Vec::new();
        write_member_header(&mut big, "a/1.bin", 10 << 30).unwrap();
        assert_eq!(big.len(), BLOCK as usize);
        assert_eq!(big[124], 0x80);
        assert_eq!(&big[128..136], &(10u64 << 30).to_be_bytes());
    }

    #[test]
    fn long_names_and_huge_fields_are_refused() {
        let long_key = "d/".repeat(47) + "kk";
        assert!(
            WebDataset::PLAIN
                .refuse(&spec(&long_key, &[("jpg", 1)]))
                .is_none()
        );
        assert!(
            WebDataset::PLAIN
                .refuse(&spec(&long_key, &[("json", 1)]))
                .unwrap()
                .contains("101 bytes")
        );
        assert!(
            WebDataset::PLAIN
                .refuse(&spec("k", &[("bin", MAX_MEMBER + 1)]))
                .unwrap()
                .contains("8 GiB")
        );
    }
}
