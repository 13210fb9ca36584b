//! Streaming structural check of a tar shard under the WebDataset readers' rules, fed
//! the bytes during the same read that hashes the file.
//!
//! It reports what `webdataset` and `wids` silently get wrong: damaged headers (readers
//! stop without error), truncation at a member boundary or inside a member, a zeroed
//! block where a header belongs, data after the end, split or duplicated samples, names
//! the readers key differently, and members they ignore. PAX records and GNU sparse
//! maps are read by the parsers the input walk of `ls`, `cat` and `pack` uses
//! ([`super::ustar`]); a sparse member is read as `tarfile` reads it, its holes
//! expanded ([`sparse`]).

use std::collections::HashSet;

use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use self::header::{checksum_ok, header_sum, parse_octal};
use self::state::{Member, State};
use super::readers::Listing;
use super::readers::check::listing_facts;
use super::ustar::pax::PaxInfo;
use super::ustar::{B, BLOCK, MAX_META, number};
/// Most findings kept for one shard; the rest are counted in one last finding. A few
/// KiB of a compressed shard can decompress to millions of identical bad headers.
pub const MAX_FINDINGS: usize = 10_000;

/// Structural checker for one tar shard.
pub struct TarInspector {
    path: String,
    pos: u64,
    block: [u8; B],
    fill: usize,
    state: State,
    findings: Vec<Finding>,
    /// Findings over [`MAX_FINDINGS`]: how many, whether any was an error, the first.
    dropped: (u64, bool, Option<Finding>),
    current: Option<String>,
    fields: Vec<String>,
    seen: HashSet<u64>,
    samples: u64,
    first_key: Option<String>,
    last_key: Option<String>,
    /// A name from a GNU long-name record or a PAX header for the next member: the
    /// first one wins, as `tarfile` applies the outermost extension header last.
    pending_name: Option<String>,
    /// What the PAX headers before the next member said (the name taken out).
    pending: PaxInfo,
    /// Where the extension headers before the next member start.
    pending_start: Option<u64>,
    /// Every regular member's place, when the readers' indexes are checked.
    listing: Option<Listing>,
}

impl TarInspector {
    /// A checker for the shard at `path` (used in findings).
    pub fn new(path: &str) -> Self {
        Self {
            path: path.to_string(),
            pos: 0,
            block: [0; B],
            fill: 0,
            state: State::Header,
            findings: Vec::new(),
            dropped: (0, false, None),
            current: None,
            fields: Vec::new(),
            seen: HashSet::new(),
            samples: 0,
            first_key: None,
            last_key: None,
            pending_name: None,
            pending: PaxInfo::default(),
            pending_start: None,
            listing: None,
        }
    }

    /// A checker that also lists where each sample and member lies, and records the
    /// digests of the DALI and Energon indexes that listing gives in the inspection's
    /// facts (for `verify`'s check of those indexes).
    pub fn listing(path: &str) -> Self {
        Self {
            listing: Some(Listing::default()),
            ..Self::new(path)
        }
    }

    fn push(&mut self, finding: Finding) {
        if self.findings.len() < MAX_FINDINGS {
            self.findings.push(finding);
            return;
        }
        let (count, any_error, first) = &mut self.dropped;
        *count += 1;
        *any_error |= finding.is_error();
        first.get_or_insert(finding);
    }

    fn error(&mut self, kind: FindingKind, at: u64, message: String) {
        self.push(Finding::error(kind, &self.path, message).at(at));
    }

    fn warning(&mut self, kind: FindingKind, at: u64, message: String) {
        self.push(Finding::warning(kind, &self.path, message).at(at));
    }

    /// Handles one complete block while a header (or the end marker) is expected.
    fn on_block(&mut self, block: &[u8; B], at: u64) {
        let zero = block.iter().all(|&b| b == 0);
        match std::mem::replace(&mut self.state, State::Stopped) {
            State::Header if zero => {
                self.state = State::End {
                    zero_start: at,
                    zero_blocks: 1,
                    junk_at: None,
                };
            }
            State::Header => self.on_header(block, at),
            State::End {
                zero_start,
                zero_blocks,
                junk_at: None,
            } if zero => {
                self.state = State::End {
                    zero_start,
                    zero_blocks: zero_blocks + 1,
                    junk_at: None,
                };
            }
            State::End {
                zero_start,
                zero_blocks,
                junk_at,
            } => {
                // A real archive ends with two or more zero blocks and nothing but zeros
                // after them. A valid header further on means the zeros were written over
                // the middle of the archive (a lost block, a zero-filled hole).
                if zero_blocks < 2 || (!zero && checksum_ok(block)) {
                    self.push(
                        Finding::error(
                            FindingKind::PrematureEnd,
                            &self.path,
                            format!(
                                "zero bytes at {zero_start} where a member header belongs, yet the archive continues at byte {at}: readers stop at {zero_start} and silently lose everything after it"
                            ),
                        )
                        .range(zero_start, at),
                    );
                    return;
                }
                let junk_at = junk_at.or_else(|| {
                    block
                        .iter()
                        .position(|&b| b != 0)
                        .map(|first| at + first as u64)
                });
                self.state = State::End {
                    zero_start,
                    zero_blocks,
                    junk_at,
                };
            }
            State::SparseExtension(sparse) => self.on_extension(sparse, block, at),
            State::SparseText(sparse, text) => self.on_map_text(sparse, text, block, at),
            _ => unreachable!("on_block runs only in states that read whole blocks"),
        }
    }

    fn on_header(&mut self, block: &[u8; B], at: u64) {
        let stored = parse_octal(&block[148..156]);
        let computed = header_sum(block);
        if stored != Some(computed) {
            let stored_text = stored.map_or_else(|| "unreadable".to_string(), |s| s.to_string());
            self.push(
                Finding::error(
                    FindingKind::BadHeader,
                    &self.path,
                    "header checksum mismatch: the header is damaged; readers stop here without an error and lose the rest of the shard",
                )
                .at(at)
                .values(computed, stored_text),
            );
            return;
        }
        let Some(header_size) = number(&block[124..136]) else {
            self.error(
                FindingKind::BadHeader,
                at,
                "size field is not a number".into(),
            );
            return;
        };
        let pax = std::mem::take(&mut self.pending);
        let stored = pax.stored.unwrap_or(header_size);
        if stored > i64::MAX as u64 {
            // A PAX record or a base-256 size field can say anything up to 2^64 - 1; no
            // file holds such a member (and its padding and end would overflow).
            self.error(
                FindingKind::BadHeader,
                at,
                format!("member size {stored} is larger than any file: the header is damaged and readers stop here"),
            );
            self.state = State::Stopped;
            return;
        }
        let name = match self.pending_name.take() {
            Some(name) => name,
            None => self.header_name(block, at),
        };
        let typeflag = block[156];
        let start = self.pending_start.take().unwrap_or(at);
        let member = Member {
            name: name.clone(),
            header_at: at,
            data_at: at + BLOCK,
            size: stored,
        };
        match typeflag {
            b'0' | 0 | b'7' | b'S' => {
                if typeflag == b'7' {
                    self.warning(
                        FindingKind::NonRegularMember,
                        at,
                        format!("member `{name}` has type `7` (contiguous file): wids ignores it"),
                    );
                }
                self.on_member(&name, at);
                if let Some(listing) = &mut self.listing {
                    listing.member(&name, start, at + BLOCK, stored);
                }
                self.on_regular(block, header_size, pax, member);
                return;
            }
            b'x' | b'X' | b'L' | b'g' | b'K' => {
                // A global header belongs to no member.
                if typeflag != b'g' || start != at {
                    self.pending_start = Some(start);
                }
                let pad = stored.div_ceil(BLOCK) * BLOCK - stored;
                self.state = State::Meta {
                    remaining: stored,
                    pad,
                    kind: typeflag,
                    data: Vec::new(),
                    size: stored,
                    at,
                };
                self.skip_empty();
                return;
            }
            b'5' => {}
            b'1' | b'2' => {
                let what = if typeflag == b'1' {
                    "a hard link"
                } else {
                    "a symbolic link"
                };
                self.error(
                    FindingKind::NonRegularMember,
                    at,
                    format!("member `{name}` is {what}: readers ignore it, so its sample lacks that file"),
                );
            }
            other => self.warning(
                FindingKind::NonRegularMember,
                at,
                format!(
                    "member `{name}` has type `{}`: readers ignore it",
                    other.escape_ascii()
                ),
            ),
        }
        self.state = State::Data {
            remaining: stored,
            member,
        };
        self.skip_empty();
    }

    /// Advances past zero-length data or padding immediately.
    fn skip_empty(&mut self) {
        match std::mem::replace(&mut self.state, State::Header) {
            State::Data {
                remaining: 0,
                member,
            } => {
                let pad = member.size.div_ceil(BLOCK) * BLOCK - member.size;
                self.state = if pad == 0 {
                    State::Header
                } else {
                    State::Padding {
                        remaining: pad,
                        member,
                    }
                };
            }
            State::Padding { remaining: 0, .. } => self.state = State::Header,
            State::Meta {
                remaining: 0,
                pad,
                kind,
                data,
                size,
                at,
            } => {
                self.finish_meta(kind, &data, size, at);
                if pad > 0 {
                    let member = Member {
                        name: String::new(),
                        header_at: at,
                        data_at: at + BLOCK,
                        size: 0,
                    };
                    self.state = State::Padding {
                        remaining: pad,
                        member,
                    };
                }
            }
            other => self.state = other,
        }
    }
}

impl Inspector for TarInspector {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match &mut self.state {
                State::Stopped => return,
                State::Data { remaining, .. } | State::Padding { remaining, .. } => {
                    let take = (*remaining).min(data.len() as u64);
                    *remaining -= take;
                    self.pos += take;
                    data = &data[take as usize..];
                    self.skip_empty();
                }
                State::Meta {
                    remaining,
                    data: buf,
                    size,
                    ..
                } => {
                    let take = (*remaining).min(data.len() as u64);
                    if *size <= MAX_META {
                        buf.extend_from_slice(&data[..take as usize]);
                    }
                    *remaining -= take;
                    self.pos += take;
                    data = &data[take as usize..];
                    self.skip_empty();
                }
                State::Header
                | State::End { .. }
                | State::SparseExtension(_)
                | State::SparseText(..) => {
                    let take = (B - self.fill).min(data.len());
                    self.block[self.fill..self.fill + take].copy_from_slice(&data[..take]);
                    self.fill += take;
                    self.pos += take as u64;
                    data = &data[take..];
                    if self.fill == B {
                        self.fill = 0;
                        let block = self.block;
                        self.on_block(&block, self.pos - BLOCK);
                    }
                }
            }
        }
    }

    fn finish(self: Box<Self>) -> Inspection {
        let (mut inspection, listing) = self.finish_listed();
        if let Some(listing) = listing {
            inspection.facts.extend(listing_facts(&listing));
        }
        inspection
    }
}

impl TarInspector {
    /// Ends the walk: the inspection, and the listing when one was asked for
    /// ([`TarInspector::listing`]).
    pub fn finish_listed(mut self: Box<Self>) -> (Inspection, Option<Listing>) {
        if let Some(listing) = &mut self.listing {
            listing.end = match &self.state {
                State::End { zero_start, .. } => *zero_start,
                _ => self.pos,
            };
        }
        self.end_findings();
        self.dropped_finding();
        let inspection = Inspection {
            format: "webdataset".into(),
            samples: Some(self.samples),
            first_key: self.first_key.take(),
            last_key: self.last_key.take(),
            findings: std::mem::take(&mut self.findings),
            ..Inspection::default()
        };
        (inspection, self.listing.take())
    }

    /// What the state the stream ended in says: a member, header, padding or map cut
    /// short, a missing or half end-of-archive marker, or bytes after it.
    fn end_findings(&mut self) {
        let end = self.pos;
        let partial_nonzero = self.block[..self.fill].iter().any(|&b| b != 0);
        match std::mem::replace(&mut self.state, State::Stopped) {
            State::Header if self.fill > 0 => self.error(
                FindingKind::Truncated,
                end - self.fill as u64,
                format!("file ends inside a member header ({} of 512 bytes): the shard is truncated", self.fill),
            ),
            State::Header if end == 0 => self.error(FindingKind::Truncated, 0, "file is empty: not a tar archive".into()),
            State::Header => self.error(
                FindingKind::MissingEndMarker,
                end,
                "no end-of-archive marker: the shard was cut at a member boundary and readers silently see only the samples before it".into(),
            ),
            State::Data { remaining, member } => {
                let data_end = member.data_at + member.size;
                self.push(
                    Finding::error(
                        FindingKind::Truncated,
                        &self.path,
                        format!(
                            "member `{}` (header at byte {}) is cut short: {remaining} of its {} bytes are missing",
                            member.name, member.header_at, member.size
                        ),
                    )
                    .range(end, data_end)
                    .values(format!("{data_end} bytes"), format!("{end} bytes")),
                );
            }
            State::Padding { member, .. } => self.error(
                FindingKind::Truncated,
                end,
                format!("file ends inside the padding after member `{}`: the shard is truncated", member.name),
            ),
            State::Meta { at, .. } => self.error(FindingKind::Truncated, end, format!("file ends inside the extended header at byte {at}")),
            State::SparseExtension(sparse) | State::SparseText(sparse, _) => self.error(
                FindingKind::Truncated,
                end - self.fill as u64,
                format!("file ends inside the sparse map of member `{}` (header at byte {})", sparse.member.name, sparse.member.header_at),
            ),
            State::End { junk_at: Some(junk), zero_start, .. } => self.error(
                FindingKind::TrailingData,
                junk,
                format!("non-zero bytes after the end-of-archive marker at byte {zero_start}"),
            ),
            State::End { zero_blocks: 1, zero_start, .. } => self.error(
                FindingKind::MissingEndMarker,
                zero_start,
                "only one of the two end-of-archive zero blocks is present: the shard is truncated".into(),
            ),
            State::End { zero_start, .. } if partial_nonzero => self.error(
                FindingKind::TrailingData,
                end - self.fill as u64,
                format!("non-zero bytes after the end-of-archive marker at byte {zero_start}"),
            ),
            State::End { .. } | State::Stopped => {}
        }
    }

    /// One finding in place of those past [`MAX_FINDINGS`]: the first of them, counted.
    fn dropped_finding(&mut self) {
        if let (count, any_error, Some(first)) = std::mem::take(&mut self.dropped) {
            let mut rest = Finding {
                message: format!(
                    "{count} more finding(s) in this shard are not listed (the first {MAX_FINDINGS} are); the first of them: {}",
                    first.message
                ),
                ..first
            };
            if any_error {
                rest.severity = shardsmith_manifest::Severity::Error;
            }
            self.findings.push(rest);
        }
    }
}

mod header;
mod meta;
mod names;
mod sparse;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_gnu;
