//! The check of a WebDataset shard whatever its compression. The content decides, as
//! for Python's `tarfile` mode `r|*` (webdataset's reader): a gzip (`1f 8b`) or zstd
//! (`28 b5 2f fd`) stream is decompressed as it is read and the tar inside walked by
//! [`TarInspector`]; anything else is walked as a plain tar. A name that says otherwise
//! (`.tar` holding gzip, `.tar.gz` holding a plain tar or neither) is reported.
//!
//! Compressed input is pushed through the decoders block by block; nothing is retained
//! but a 64 KiB output buffer, the decoder's window (32 KiB for deflate; for zstd what
//! the frame asks, at most 128 MiB, zstd's own default limit) and the tar walk's state,
//! whose findings are capped: a decompression bomb costs time, never unbounded memory.
//! The gzip member is parsed here (header, raw deflate, CRC-32 and size trailer) so that
//! every finding about the compressed stream has its exact compressed byte offset; tar
//! findings keep their offsets in the decompressed tar and say so.

mod codec;
mod gzip;
mod stream;

use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use self::codec::Codec;
use self::stream::Stream;
use super::inspect::TarInspector;

/// Bytes looked at before choosing the walk: the compression magics, and the ustar
/// magic at 257 of a plain tar under a compressed name.
const SNIFF: usize = 262;

fn describe(codec: Option<Codec>) -> &'static str {
    match codec {
        None => "an uncompressed tar",
        Some(Codec::Gz) => "a gzip stream",
        Some(Codec::Zstd) => "a zstd stream",
    }
}

/// Structural checker for one WebDataset shard: plain, gzip or zstd.
pub struct ShardInspector {
    path: String,
    head: Vec<u8>,
    body: Option<Body>,
    /// List the members of a plain tar for the readers' indexes.
    listing: bool,
}

enum Body {
    Plain(Box<TarInspector>, Vec<Finding>),
    Stream(Box<Stream>),
}

impl ShardInspector {
    /// A checker for the shard at `path` (used in findings, and for what its name says).
    pub fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            head: Vec::new(),
            body: None,
            listing: false,
        }
    }

    /// A checker that also lists a plain tar's members, for the check of the readers'
    /// indexes ([`TarInspector::listing`]).
    pub fn listing(path: &str) -> Self {
        Self {
            listing: true,
            ..Self::new(path)
        }
    }

    /// Chooses the walk from the first bytes (all of them when the file is shorter) and
    /// starts it with them.
    fn start(&mut self) {
        let path = self.path.as_str();
        let found = Codec::sniff(&self.head);
        let mut findings = Vec::new();
        if let Some(named) = Codec::named(path)
            && named != found
            && !self.head.is_empty()
        {
            findings.push(self.misnamed(named, found));
        }
        let mut tar = Box::new(TarInspector::new(path));
        if self.listing && found.is_none() {
            tar = Box::new(TarInspector::listing(path));
        }
        let mut body = match found {
            None => Body::Plain(tar, findings),
            Some(codec) => Body::Stream(Box::new(Stream::new(path, codec, tar, findings))),
        };
        body.update(&std::mem::take(&mut self.head));
        self.body = Some(body);
    }

    /// The finding about a name that says `named` on content that is `found`.
    fn misnamed(&self, named: Option<Codec>, found: Option<Codec>) -> Finding {
        let looks_tar = self.head.get(257..262) == Some(b"ustar");
        if let (Some(codec), None, false) = (named, found, looks_tar) {
            let start: Vec<String> = self
                .head
                .iter()
                .take(4)
                .map(|b| format!("{b:02x}"))
                .collect();
            let message = format!(
                "named as {} but not one: it starts with {} (neither a compression magic nor a tar header); readers fail on it",
                describe(Some(codec)),
                start.join(" ")
            );
            return Finding::error(FindingKind::DecompressionFailed, &self.path, message).at(0);
        }
        let message = format!(
            "named as {} but holds {}: webdataset reads it by its content, but wids and tools that go by the name fail; rename it",
            describe(named),
            describe(found)
        );
        Finding::warning(FindingKind::WrongContent, &self.path, message).at(0)
    }
}

impl Inspector for ShardInspector {
    fn update(&mut self, data: &[u8]) {
        if let Some(body) = &mut self.body {
            return body.update(data);
        }
        let take = (SNIFF - self.head.len()).min(data.len());
        self.head.extend_from_slice(&data[..take]);
        if self.head.len() == SNIFF {
            self.start();
            self.update(&data[take..]);
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        if self.body.is_none() {
            self.start();
        }
        match self.body.take().expect("started above") {
            Body::Plain(tar, mut findings) => {
                let mut inspection = tar.finish();
                findings.append(&mut inspection.findings);
                inspection.findings = findings;
                inspection
            }
            Body::Stream(stream) => stream.finish(),
        }
    }
}

impl Body {
    fn update(&mut self, data: &[u8]) {
        match self {
            Body::Plain(tar, _) => tar.update(data),
            Body::Stream(stream) => stream.update(data),
        }
    }
}

#[cfg(test)]
mod tests;
