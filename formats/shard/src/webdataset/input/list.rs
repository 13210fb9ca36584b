//! Listing one shard: its members walked, grouped into samples by webdataset's rule
//! (consecutive regular members with the same key), and what a reader would drop or
//! mis-key left out with the reason.

use std::path::Path;
use std::sync::Arc;

use shardsmith_manifest::Skipped;
use shardsmith_store::InputSource;

use super::bytes::{Codec, Positioned, Stream, TarBytes};
use super::shard::{self, Body, ShardFile};
use super::walk::{Kind, MAX_META, Member, WalkError, Walker};
use crate::naming::split_key;
use crate::sample::{FieldSpec, Interner, SampleSpec};
use crate::{Error, Result};

/// Read-ahead of the header walk: small members cost no read each.
pub(super) const READ_AHEAD: usize = 1 << 20;

/// One shard's samples and the members left out.
pub(super) struct Listed {
    pub body: Body,
    pub samples: Vec<SampleSpec>,
    pub skipped: Vec<Skipped>,
}

/// Why the raw tree would refuse `name` as a path, if it would.
fn refused_path(name: &str) -> Option<&'static str> {
    if name.starts_with('/') {
        return Some("has an absolute path");
    }
    if name.starts_with("./") {
        return Some(
            "starts with `./` (`tar -cf x.tar .` writes such names): webdataset keys it with the `./`, a file tree cannot hold it; create the tar with `tar -C DIR -cf x.tar NAMES` or `--transform 's,^\\./,,'`",
        );
    }
    if name
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Some(
            "has an empty, `.` or `..` path component: webdataset would key it as spelled, a file tree cannot hold it",
        );
    }
    if name.chars().any(char::is_control) {
        return Some("has a control character in its name");
    }
    None
}

/// The sample being grouped.
struct Building {
    key: String,
    start: u64,
    fields: Vec<FieldSpec>,
    /// Why the whole sample is left out (a repeated field).
    bad: Option<String>,
}

/// Groups one shard's members into samples.
struct Grouper<'a> {
    rel: &'a str,
    shard: usize,
    names: Interner,
    current: Option<Building>,
    out: Listed,
}

impl Grouper<'_> {
    fn skip(&mut self, name: &str, why: &str) {
        self.out.skipped.push(Skipped {
            path: format!("{}/{name}", self.rel),
            reason: format!("{}: member `{name}` {why}", self.rel),
        });
    }

    fn member(&mut self, member: Member) -> Result<(), WalkError> {
        let name = match (&member.kind, &member.name) {
            (Kind::Directory, _) => return Ok(()),
            (Kind::Other(what), _) => {
                let shown = member.shown();
                self.skip(
                    &shown,
                    &format!("is {what}, not a regular file: webdataset ignores it"),
                );
                return Ok(());
            }
            (Kind::Unknown(flag), _) => {
                let shown = member.shown();
                let why = format!(
                    "has tar member type `{}`, not a regular file: webdataset ignores it",
                    flag.escape_ascii()
                );
                self.skip(&shown, &why);
                return Ok(());
            }
            (Kind::Regular, Err(_)) => {
                let shown = member.shown();
                self.skip(&shown, "has a name that is not valid UTF-8: wids cannot read it and keys would not round-trip");
                return Ok(());
            }
            (Kind::Regular, Ok(name)) => name.as_str(),
        };
        if let Some(why) = refused_path(name) {
            self.skip(name, why);
            return Ok(());
        }
        let (key, ext) = match split_key(name) {
            Ok((key, ext)) if !key.is_empty() => (key, ext),
            Ok(_) => {
                self.skip(name, "has an empty key");
                return Ok(());
            }
            Err(why) => {
                self.skip(name, &why.to_string());
                return Ok(());
            }
        };
        let source_ext = &name[key.len() + 1..];
        let unread = member.unread.as_ref().map(|why| {
            format!(
                "belongs to sample `{key}`, whose member `{name}` shardsmith cannot read ({why}), so none of its members is packed"
            )
        });
        let field = FieldSpec {
            ext: self.names.get(&ext),
            source_ext: self.names.get(source_ext),
            size: member.size,
            encoded: member.size,
        };
        if self.current.as_ref().is_some_and(|b| b.key == key) {
            let building = self.current.as_mut().expect("checked above");
            if let Some(first) = building.fields.iter().find(|f| f.ext == field.ext) {
                let reason = format!(
                    "belongs to sample `{key}`, which has two members for field `{ext}` (`{key}.{}` and `{name}`): webdataset raises an error on such samples, so none of its members is packed",
                    first.source_ext
                );
                building.bad.get_or_insert(reason);
            }
            if let Some(reason) = unread {
                building.bad.get_or_insert(reason);
            }
            building.fields.push(field);
        } else {
            self.flush();
            self.current = Some(Building {
                key: key.to_string(),
                start: member.start,
                fields: vec![field],
                bad: unread,
            });
        }
        Ok(())
    }

    /// Ends the sample being grouped.
    fn flush(&mut self) {
        let Some(mut b) = self.current.take() else {
            return;
        };
        if let Some(reason) = b.bad {
            for field in &b.fields {
                let name = format!("{}.{}", b.key, field.source_ext);
                self.skip(&name, &reason);
            }
            return;
        }
        b.fields.sort_by(|x, y| x.ext.cmp(&y.ext));
        let Some(origin) = shard::origin(self.shard, b.start) else {
            let reason = format!(
                "starts at offset {} of shard number {}, beyond what a listing can address (1<<{} shards, 512 TiB per shard)",
                b.start,
                self.shard,
                64 - 40
            );
            for field in &b.fields {
                let name = format!("{}.{}", b.key, field.source_ext);
                self.skip(&name, &reason);
            }
            return;
        };
        self.out.samples.push(SampleSpec {
            key: b.key,
            fields: b.fields,
            origin,
        });
    }
}

fn walk_all(grouper: &mut Grouper<'_>, bytes: &mut dyn TarBytes) -> Result<(), WalkError> {
    let mut walker = Walker::at(0);
    while let Some(member) = walker.next(bytes)? {
        grouper.member(member)?;
    }
    grouper.flush();
    Ok(())
}

/// Lists shard number `index`, decompressing a compressed one into a temporary file in
/// `scratch` when given.
pub(super) fn list_shard(
    source: &dyn InputSource,
    file: &ShardFile,
    index: usize,
    scratch: Option<&Path>,
) -> Result<Listed> {
    let src = source
        .open_ranged(&file.rel)
        .map_err(|e| shard::unreadable(&file.full, None, e))?;
    let len = src.len();
    if len == 0 {
        return Err(Error::BadInput {
            path: file.full.clone(),
            reason: "is empty (0 bytes), not a tar archive".into(),
        });
    }
    let mut head = [0u8; 4];
    let n = (len as usize).min(head.len());
    src.read_exact_at(0, &mut head[..n])
        .map_err(|e| Error::io("reading", &file.full, e))?;
    let codec = Codec::sniff(&head[..n]);
    let mut grouper = Grouper {
        rel: &file.rel,
        shard: index,
        names: Interner::default(),
        current: None,
        out: Listed {
            body: Body::Plain(len),
            samples: Vec::new(),
            skipped: Vec::new(),
        },
    };
    let damaged = |e| shard::damaged(&file.full, e);
    let Some(codec) = codec else {
        let mut bytes = Positioned::new(src, READ_AHEAD);
        walk_all(&mut grouper, &mut bytes).map_err(damaged)?;
        return Ok(grouper.out);
    };
    let spill = match scratch {
        Some(dir) => Some(
            tempfile::Builder::new()
                .prefix(&shardsmith_manifest::scratch_prefix())
                .suffix(".tar")
                .tempfile_in(dir)
                .map_err(|e| Error::io("creating a decompressed copy in", dir, e))?,
        ),
        None => None,
    };
    let (spill_file, spill_path) = match spill {
        Some(named) => {
            let (f, p) = named.into_parts();
            (Some(f), Some(p))
        }
        None => (None, None),
    };
    let mut stream = Stream::open(src, codec, spill_file).map_err(|e| {
        damaged(WalkError {
            at: 0,
            reason: format!("cannot be decompressed: {e}"),
        })
    })?;
    walk_all(&mut grouper, &mut stream).map_err(damaged)?;
    // The rest of the stream (the end blocks, padding, the trailer's checksum); no more
    // than a bounded amount of junk is decompressed after the end of the archive.
    stream.finish(MAX_META * 16).map_err(|e| {
        damaged(WalkError {
            at: 0,
            reason: format!("cannot be decompressed: {e}"),
        })
    })?;
    grouper.out.body = match spill_path {
        Some(path) => Body::Spilled(Arc::new(path)),
        None => Body::Streamed(codec),
    };
    Ok(grouper.out)
}
