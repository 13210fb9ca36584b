//! The encoder of one tar shard ([`TarEncoder`]) and the deterministic ustar member
//! headers it writes.

use std::io::{self, Write};

use super::compress::{Compressor, TarCompression};
use super::readers::listing::compact_line;
use super::ustar::{BLOCK, MAX_NAME};
use crate::format::{Field, Payload, ShardEncoder, ShardOut};

/// Writes the tar, straight into the shard's output or through a compressor in front
/// of it (made on first use, from a handle on the output).
pub(super) struct TarEncoder {
    pub(super) compression: Option<TarCompression>,
    pub(super) compressor: Option<Compressor>,
    /// What the readers' indexes need, recorded as the shard is written (`None`: no
    /// index asked for).
    pub(super) index: Option<Indexing>,
}

/// Samples and tar bytes so far (wids' index), and each sample's key and members (DALI's
/// and Energon's, as [`Listing::compact`] text) when those are asked for.
#[derive(Default)]
pub(super) struct Indexing {
    pub(super) samples: u64,
    pub(super) bytes: u64,
    pub(super) listing: Option<String>,
}

impl TarEncoder {
    pub(super) fn sink<'a>(&'a mut self, out: &'a mut ShardOut) -> io::Result<&'a mut dyn Write> {
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

/// `size` rounded up to whole tar blocks.
pub(super) fn padded(size: u64) -> u64 {
    size.div_ceil(BLOCK) * BLOCK
}

pub(super) const ZEROS: [u8; BLOCK as usize] = [0; BLOCK as usize];

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
        if let Some(index) = &mut self.index {
            index.samples += 1;
            index.bytes += fields.iter().map(|f| BLOCK + padded(f.size)).sum::<u64>();
            if let Some(listing) = &mut index.listing {
                compact_line(listing, key, fields.iter().map(|f| (f.ext, f.size)));
            }
        }
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
        Ok(match self.index.take() {
            Some(index) => {
                super::wids::shard_facts(index.samples, index.bytes + 2 * BLOCK, index.listing)
            }
            None => serde_json::Value::Null,
        })
    }
}
