//! Reading samples back: the sample's headers walked again from its first header
//! (its `origin`), each field's data read where the walk finds it. Plain and spilled
//! shards are read by positioned reads (any order: shuffled plans work); a compressed
//! shard without a spill is decompressed from its start, forward, and again from the
//! start when a plan goes back.

use std::io::{self, Read};
use std::sync::Arc;

use shardsmith_manifest::Skipped;
use shardsmith_store::{InputSource, RangeRead};

use super::bytes::{Positioned, Stream, TarBytes};
use super::list::READ_AHEAD;
use super::shard::{self, Body, ShardFile};
use super::walk::{Kind, Member, Walker};
use crate::content::{self, Validation};
use crate::sample::{FieldSpec, Loaded, SampleReader, SampleSpec, Tracked};
use crate::webdataset::ustar::sparse::{Expand, Segment};
use crate::{Error, Result};

/// Samples up to this size are read into memory (and checked by the writer); larger
/// ones are content-checked here and streamed, when the shard has random access.
const MEMORY_LIMIT: u64 = 16 << 20;

/// Where one field's data is.
#[derive(Clone)]
struct Located {
    /// Offset of its stored bytes.
    data: u64,
    /// Bytes stored there.
    stored: u64,
    /// Its size as read (a sparse file's real size).
    size: u64,
    /// A sparse file's data segments.
    sparse: Option<Arc<[Segment]>>,
}

/// The bytes of a tar from the current position on, as a reader.
struct Forward<'a>(&'a mut dyn TarBytes);

impl Read for Forward<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.fill(buf)
    }
}

/// Appends `member`'s bytes as `tarfile` reads them (a sparse file's holes expanded) to
/// `buf`, which grows only as the bytes come; their count.
fn append(bytes: &mut dyn TarBytes, member: &Member, buf: &mut Vec<u8>) -> io::Result<u64> {
    let data = Forward(bytes).take(member.stored);
    match &member.sparse {
        Some(map) => Expand::new(data, map.clone(), member.size)
            .take(member.size)
            .read_to_end(buf),
        None => data.take(member.size).read_to_end(buf),
    }
    .map(|n| n as u64)
}

enum Cursor {
    Positioned(Positioned, Arc<dyn RangeRead>),
    Stream(Box<Stream>),
}

pub(super) struct TarReader<'a> {
    pub source: &'a dyn InputSource,
    pub files: &'a [ShardFile],
    pub bodies: Vec<Body>,
    pub samples: &'a [SampleSpec],
    pub validation: Validation,
    /// The shard being read and how.
    cursor: Option<(usize, Cursor)>,
    /// Shards opened for positioned reads, most recent last: a shuffled plan moves
    /// between shards at every sample, and opening costs a request on an object store.
    opened: Vec<(usize, Arc<dyn RangeRead>)>,
}

/// Shards a reader keeps open.
const KEEP_OPEN: usize = 32;

impl<'a> TarReader<'a> {
    pub fn new(
        source: &'a dyn InputSource,
        files: &'a [ShardFile],
        bodies: Vec<Body>,
        samples: &'a [SampleSpec],
        validation: Validation,
    ) -> Self {
        Self {
            source,
            files,
            bodies,
            samples,
            validation,
            cursor: None,
            opened: Vec::new(),
        }
    }

    fn field_path(&self, shard: usize, sample: &SampleSpec, field: &FieldSpec) -> String {
        let file = &self.files[shard];
        format!(
            "{}/{}.{}",
            file.rel,
            file.member_key(&sample.key),
            field.source_ext
        )
    }

    /// A cursor on shard `index` that can reach offset `start`.
    fn cursor(&mut self, index: usize, start: u64, hint: usize) -> Result<&mut Cursor> {
        let file = &self.files[index];
        let reusable = match &self.cursor {
            Some((i, Cursor::Stream(s))) => *i == index && s.pos() <= start,
            Some((i, Cursor::Positioned(..))) => *i == index,
            None => false,
        };
        if !reusable {
            let body = &self.bodies[index];
            let cursor = match body {
                Body::Streamed(codec) => Cursor::Stream(Box::new(
                    Stream::open(shard::ranged(self.source, file, body)?, *codec, None)
                        .map_err(|e| Error::io("decompressing", &file.full, e))?,
                )),
                _ => {
                    let src = match self.opened.iter().position(|(i, _)| *i == index) {
                        Some(at) => self.opened.remove(at).1,
                        None => shard::ranged(self.source, file, body)?,
                    };
                    if self.opened.len() == KEEP_OPEN {
                        self.opened.remove(0);
                    }
                    self.opened.push((index, src.clone()));
                    Cursor::Positioned(Positioned::new(src.clone(), READ_AHEAD), src)
                }
            };
            self.cursor = Some((index, cursor));
        }
        let cursor = &mut self.cursor.as_mut().expect("set above").1;
        if let Cursor::Positioned(p, _) = cursor {
            // Reading on where the last sample ended: large read-ahead; a jump (a
            // shuffled plan): about the sample's own size.
            let sequential = p.pos() == start || p.buffered(start);
            p.set_ahead(if sequential { READ_AHEAD } else { hint });
            p.seek(start);
        }
        Ok(cursor)
    }

    /// Walks `sample`'s members from its first header; reads each field into `buf`
    /// when `into` is given, else only locates it.
    fn walk(
        &mut self,
        index: usize,
        sample: &SampleSpec,
        mut into: Option<&mut Vec<u8>>,
    ) -> Result<Vec<Located>> {
        let (shard, start) = shard::place(sample);
        let hint = (sample.payload() as usize)
            .saturating_add(sample.fields.len() * 2048 + 1024)
            .clamp(4096, READ_AHEAD);
        let full = self.files[shard].full.clone();
        let changed = |why: String| Error::BadInput {
            path: full.clone(),
            reason: format!(
                "changed since it was listed: sample `{}` (item {index} of this shard) {why}; re-run to pack the input as it is now",
                sample.key
            ),
        };
        let member_key = self.files[shard].member_key(&sample.key);
        let bytes: &mut dyn TarBytes = match self.cursor(shard, start, hint)? {
            Cursor::Positioned(p, _) => p,
            Cursor::Stream(s) => s.as_mut(),
        };
        let mut found: Vec<Option<Located>> = vec![None; sample.fields.len()];
        let mut left = sample.fields.len();
        let mut walker = Walker::at(start);
        while left > 0 {
            let member = walker
                .next(bytes)
                .map_err(|e| shard::damaged(&full, e))?
                .ok_or_else(|| changed("ends before all its members".into()))?;
            let (Kind::Regular, Ok(name)) = (member.kind, &member.name) else {
                continue;
            };
            let Some(ext) = name
                .strip_prefix(member_key)
                .and_then(|rest| rest.strip_prefix('.'))
            else {
                if crate::naming::split_key(name).is_ok() {
                    return Err(changed(format!(
                        "meets member `{name}` before all its members"
                    )));
                }
                continue;
            };
            let Some(i) = sample.fields.iter().position(|f| &*f.source_ext == ext) else {
                continue;
            };
            if found[i].is_some() {
                continue;
            }
            let field = &sample.fields[i];
            if member.size != field.size {
                return Err(Error::InputChanged {
                    path: format!("{}/{name}", self.files[shard].rel),
                    listed: field.size,
                    read: member.size,
                });
            }
            if let Some(why) = &member.unread {
                return Err(changed(format!("meets member `{name}`, which {why}")));
            }
            let stored = member.stored;
            if let Some(buf) = into.as_deref_mut() {
                // Only a compressed shard without a scratch copy reads a sample over
                // the memory limit into memory: its stored bytes are there to read, but
                // a sparse file's holes would cost memory the file never held.
                if member.size - stored > MEMORY_LIMIT && sample.payload() > MEMORY_LIMIT {
                    return Err(Error::BadInput {
                        path: format!("{full}/{name}"),
                        reason: format!(
                            "is a GNU sparse file of {} bytes of which {stored} are stored: its holes are not expanded in memory from a compressed shard; decompress the shard, or pack it (which reads from a decompressed scratch copy)",
                            member.size
                        ),
                    });
                }
                let n = append(bytes, &member, buf).map_err(|e| Error::io("reading", &full, e))?;
                if n != field.size {
                    return Err(changed(format!("ends inside member `{name}`")));
                }
            }
            found[i] = Some(Located {
                data: member.data,
                stored,
                size: member.size,
                sparse: member.sparse.clone(),
            });
            left -= 1;
        }
        Ok(found
            .into_iter()
            .map(|f| f.expect("every field found"))
            .collect())
    }
}

/// A field's data read by positioned reads.
struct Slice {
    src: Arc<dyn RangeRead>,
    at: u64,
    end: u64,
}

impl Read for Slice {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = (buf.len() as u64).min(self.end - self.at) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.src.read_at(self.at, &mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.at += n as u64;
        Ok(n)
    }
}

impl SampleReader for TarReader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let sample = &self.samples[index];
        let (shard, _) = shard::place(sample);
        let streamed = !self.bodies[shard].random_access();
        if sample.payload() <= MEMORY_LIMIT || streamed {
            buf.clear();
            let located = self.walk(index, sample, Some(buf))?;
            // Fields were read in tar order; the ranges follow field order.
            let mut ranges = vec![(0, 0); sample.fields.len()];
            let mut order: Vec<usize> = (0..sample.fields.len()).collect();
            order.sort_by_key(|&i| located[i].data);
            let mut at = 0usize;
            for i in order {
                let size = sample.fields[i].size as usize;
                ranges[i] = (at, at + size);
                at += size;
            }
            return Ok(Ok(Loaded::Memory(ranges)));
        }
        let located = self.walk(index, sample, None)?;
        let Some((_, Cursor::Positioned(_, src))) = &self.cursor else {
            unreachable!("random access shards read by positioned reads")
        };
        let src = src.clone();
        let leave_out = |bad: &str, reason: String| -> Vec<Skipped> {
            sample
                .fields
                .iter()
                .map(|f| {
                    let path = self.field_path(shard, sample, f);
                    let reason = if path == bad {
                        reason.clone()
                    } else {
                        format!(
                            "left out with `{bad}`, another member of sample `{}`",
                            sample.key
                        )
                    };
                    Skipped { path, reason }
                })
                .collect()
        };
        let slice = |l: &Located| -> Box<dyn Read + Send> {
            let stored = Slice {
                src: src.clone(),
                at: l.data,
                end: l.data + l.stored,
            };
            match &l.sparse {
                Some(map) => Box::new(Expand::new(stored, map.clone(), l.size)),
                None => Box::new(stored),
            }
        };
        for (field, l) in sample.fields.iter().zip(&located) {
            if !content::is_checked(&field.ext, self.validation) {
                continue;
            }
            let path = self.field_path(shard, sample, field);
            match content::check_stream(&field.ext, slice(l)) {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => return Ok(Err(leave_out(&path, reason.to_string()))),
                Err(e) => return Ok(Err(leave_out(&path, format!("cannot be read: {e}")))),
            }
        }
        let streams = located.iter().map(|l| Tracked::new(slice(l))).collect();
        Ok(Ok(Loaded::Streams(streams)))
    }
}
