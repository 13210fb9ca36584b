//! The sequential pass over a torch zip checkpoint (or a DCP `.distcp` file of many
//! archives), once the archives were located from the file's end: every local header
//! checked against the central directory, every member's CRC-32 recomputed, `data.pkl`
//! read without executing it, and each storage's bytes scanned with its dtype.

use shardsmith_manifest::{Finding, FindingKind, Inspection, Inspector};

use super::central::{Damage, Entry, Located};
use super::findings::{self, ArchiveView, MemberView};
use crate::content::TensorScan;
use crate::pickle;
use crate::report::Settings;
use crate::torch::{self, Contents};

/// Largest `data.pkl` read into memory.
pub const MAX_PICKLE: u64 = 256 << 20;

#[derive(Clone, Debug, PartialEq)]
enum Role {
    Pickle,
    ByteOrder,
    Storage(String),
    Other,
}

struct Member {
    entry: Entry,
    role: Role,
    /// The next member's header or the central directory: data must end before it.
    limit: u64,
}

enum State {
    Seek,
    Header(Vec<u8>, usize),
    Data {
        end: u64,
        crc: crc32fast::Hasher,
        /// Boxed: the scan is large and the other states are small.
        scan: Option<Box<TensorScan>>,
        buf: Option<Vec<u8>>,
        start: u64,
    },
}

struct Seen {
    member: usize,
    start: u64,
    end: u64,
    crc: u32,
    scan: Option<TensorScan>,
}

#[derive(Default)]
struct ArchiveState {
    contents: Option<Contents>,
    pickle_error: Option<(u64, String)>,
    pickle_seen: bool,
    byteorder: Option<Vec<u8>>,
    seen: Vec<Seen>,
}

/// Streaming checker of a torch zip file or a DCP data file.
pub struct ZipInspector {
    path: String,
    format: &'static str,
    settings: Settings,
    members: Vec<Member>,
    archives: Vec<ArchiveState>,
    damage: Option<Damage>,
    /// What findings call each archive (a DCP item's name), when not its tensors.
    labels: Vec<Option<String>>,
    expected_end: u64,
    cur: usize,
    pos: u64,
    state: State,
    findings: Vec<Finding>,
}

fn role(name: &str) -> Role {
    let rest = name.split_once('/').map_or(name, |(_, r)| r);
    match rest {
        "data.pkl" => Role::Pickle,
        "byteorder" => Role::ByteOrder,
        _ => match rest.strip_prefix("data/") {
            Some(key) if !key.is_empty() => Role::Storage(key.to_string()),
            _ => Role::Other,
        },
    }
}

impl ZipInspector {
    /// A checker for `path` whose archives were located as `located`.
    pub fn new(path: &str, format: &'static str, located: Located, settings: Settings) -> Self {
        let mut members: Vec<Member> = Vec::new();
        for archive in &located.archives {
            let mut entries = archive.entries.clone();
            entries.sort_by_key(|e| e.header_at);
            let limits: Vec<u64> = entries
                .iter()
                .skip(1)
                .map(|e| e.header_at)
                .chain([archive.central])
                .collect();
            for (entry, limit) in entries.into_iter().zip(limits) {
                members.push(Member {
                    role: role(&entry.name),
                    entry,
                    limit,
                });
            }
        }
        let expected_end = located.archives.last().map_or(0, |a| a.end);
        Self {
            path: path.to_string(),
            format,
            settings,
            members,
            archives: located
                .archives
                .iter()
                .map(|_| ArchiveState::default())
                .collect(),
            damage: located.damage,
            labels: Vec::new(),
            expected_end,
            cur: 0,
            pos: 0,
            state: State::Seek,
            findings: Vec::new(),
        }
    }

    /// Skips the bytes before the next member's local header (`None` past the last
    /// member); at the header, starts reading it. The bytes of `data` used.
    fn seek(&mut self, data: &[u8]) -> Option<usize> {
        let m = self.members.get(self.cur)?;
        let at = m.entry.header_at;
        if self.pos < at {
            let skip = (at - self.pos).min(data.len() as u64) as usize;
            self.pos += skip as u64;
            return Some(skip);
        }
        if self.pos == at {
            self.state = State::Header(Vec::with_capacity(30), 30);
        } else {
            let message = format!(
                "member `{}` starts at byte {at}, inside the previous member: overlapping members (a zip bomb or damage)",
                m.entry.name
            );
            self.error(FindingKind::BadHeader, at, message);
            self.skip_member();
        }
        Some(0)
    }

    /// Gathers the local header (30 bytes, then its name and extra field) and checks it
    /// once whole. The bytes of `data` used.
    fn read_header(&mut self, data: &[u8]) -> usize {
        let State::Header(buf, need) = &mut self.state else {
            return 0;
        };
        let take = (*need - buf.len()).min(data.len());
        buf.extend_from_slice(&data[..take]);
        self.pos += take as u64;
        if buf.len() < *need {
            return take;
        }
        if *need == 30 {
            if &buf[..4] != b"PK\x03\x04" {
                let m = &self.members[self.cur];
                let message = format!(
                    "local header of `{}` is damaged (no signature): torch fails with \"invalid header or archive is corrupted\"",
                    m.entry.name
                );
                let at = m.entry.header_at;
                self.error(FindingKind::BadHeader, at, message);
                self.skip_member();
                return take;
            }
            let n = u16::from_le_bytes([buf[26], buf[27]]);
            let e = u16::from_le_bytes([buf[28], buf[29]]);
            *need = 30 + usize::from(n) + usize::from(e);
            if *need > 30 {
                return take;
            }
        }
        let header = std::mem::take(buf);
        match self.on_header(&header) {
            Some(state) => self.state = state,
            None => self.skip_member(),
        }
        take
    }

    /// Feeds a member's data to its CRC-32, its scan and (for `data.pkl`) its buffer;
    /// ends the member at its last byte. The bytes of `data` used.
    fn read_data(&mut self, data: &[u8]) -> usize {
        let State::Data {
            end,
            crc,
            scan,
            buf,
            start,
        } = &mut self.state
        else {
            return 0;
        };
        let take = (*end - self.pos).min(data.len() as u64) as usize;
        let piece = &data[..take];
        crc.update(piece);
        if let Some(scan) = scan {
            scan.update(piece);
        }
        if let Some(buf) = buf {
            buf.extend_from_slice(piece);
        }
        self.pos += take as u64;
        if self.pos == *end {
            let (start, crc, scan, buf) = (
                *start,
                crc.clone().finalize(),
                scan.take().map(|s| *s),
                buf.take(),
            );
            self.end_member(start, crc, scan, buf);
        }
        take
    }

    /// Names the archives, in order, for the findings (DCP items, whose tensor is the
    /// pickle's root: their names are in `.metadata`).
    pub fn with_labels(mut self, labels: Vec<Option<String>>) -> Self {
        self.labels = labels;
        self
    }

    fn error(&mut self, kind: FindingKind, at: u64, message: String) {
        self.findings
            .push(Finding::error(kind, &self.path, message).at(at));
    }

    fn skip_member(&mut self) {
        self.cur += 1;
        self.state = State::Seek;
    }

    fn on_header(&mut self, header: &[u8]) -> Option<State> {
        let m = &self.members[self.cur];
        let at = m.entry.header_at;
        let name_len = usize::from(u16::from_le_bytes([header[26], header[27]]));
        let name = &header[30..30 + name_len];
        if name != m.entry.name.as_bytes() {
            let message = format!(
                "local header of `{}` names `{}`: the central directory and the data disagree",
                m.entry.name,
                String::from_utf8_lossy(name)
            );
            self.error(FindingKind::BadHeader, at, message);
            return None;
        }
        let start = at + header.len() as u64;
        let end = start.saturating_add(m.entry.size);
        if end > m.limit {
            let message = format!(
                "member `{}` ({} bytes from byte {start}) runs into the next member or the central directory at {}: overlapping members (a zip bomb or damage)",
                m.entry.name, m.entry.size, m.limit
            );
            self.error(FindingKind::BadHeader, at, message);
            return None;
        }
        if m.entry.method != 0 {
            let message = format!(
                "member `{}` is compressed (method {}); torch writes members stored, so it was not verified",
                m.entry.name, m.entry.method
            );
            self.findings.push(
                Finding::warning(FindingKind::BadHeader, &self.path, message).range(start, end),
            );
            return None;
        }
        let archive = &self.archives[m.entry.archive];
        let scan = match &m.role {
            Role::Storage(key) => {
                let contents = archive.contents.as_ref();
                let storage = contents.and_then(|c| c.storages.get(key));
                let dtype = storage.and_then(|s| s.dtype);
                let scan = TensorScan::new(start, dtype, self.settings.scan_values);
                Some(Box::new(
                    match contents.zip(storage).and_then(|(c, s)| sole_shape(c, s)) {
                        Some((shape, contiguous)) => scan.with_shape(&shape, contiguous),
                        None => scan,
                    },
                ))
            }
            _ => None,
        };
        let buf = match m.role {
            Role::Pickle if m.entry.size <= MAX_PICKLE => {
                Some(Vec::with_capacity(m.entry.size as usize))
            }
            Role::ByteOrder if m.entry.size <= 16 => Some(Vec::new()),
            _ => None,
        };
        Some(State::Data {
            end,
            crc: crc32fast::Hasher::new(),
            scan,
            buf,
            start,
        })
    }

    fn end_member(&mut self, start: u64, crc: u32, scan: Option<TensorScan>, buf: Option<Vec<u8>>) {
        let m = &self.members[self.cur];
        let archive = &mut self.archives[m.entry.archive];
        match (&m.role, buf) {
            (Role::Pickle, buf) => {
                archive.pickle_seen = true;
                match buf.map(|b| pickle::parse(&b)) {
                    Some(Ok(p)) => archive.contents = Some(torch::contents(&p)),
                    Some(Err(e)) => {
                        archive.pickle_error = Some((start + e.at as u64, e.reason.to_string()))
                    }
                    None => {
                        archive.pickle_error = Some((
                            start,
                            format!(
                                "data.pkl of {} bytes is larger than this reader's {MAX_PICKLE}-byte limit; tensors were not listed",
                                m.entry.size
                            ),
                        ));
                    }
                }
            }
            (Role::ByteOrder, Some(b)) => archive.byteorder = Some(b),
            _ => {}
        }
        let end = start + m.entry.size;
        archive.seen.push(Seen {
            member: self.cur,
            start,
            end,
            crc,
            scan,
        });
        self.skip_member();
    }
}

impl Inspector for ZipInspector {
    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let used = match self.state {
                State::Seek => {
                    let Some(used) = self.seek(data) else {
                        self.pos += data.len() as u64;
                        return;
                    };
                    used
                }
                State::Header(..) => self.read_header(data),
                State::Data { .. } => self.read_data(data),
            };
            data = &data[used..];
        }
    }

    fn finish(mut self: Box<Self>) -> Inspection {
        if let Some(d) = self.damage.take() {
            let kind = if d.no_end_record {
                FindingKind::Truncated
            } else {
                FindingKind::BadHeader
            };
            let what = if self.archives.is_empty() {
                String::new()
            } else {
                format!(
                    "; bytes 0..{} were not verified ({} archive(s) after them were)",
                    d.end,
                    self.archives.len()
                )
            };
            self.findings
                .push(Finding::error(kind, &self.path, format!("{}{what}", d.message)).at(d.end));
        }
        let unread: Vec<(u64, String)> = self.members[self.cur.min(self.members.len())..]
            .iter()
            .filter(|m| m.entry.header_at >= self.pos)
            .map(|m| (m.entry.header_at, m.entry.name.clone()))
            .collect();
        for (at, name) in unread {
            let message = format!(
                "the central directory puts member `{name}` at byte {at}, past the end of the file: it was never read"
            );
            self.error(FindingKind::BadHeader, at, message);
        }
        if self.pos < self.expected_end {
            let (pos, end) = (self.pos, self.expected_end);
            self.findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &self.path,
                    "the file ended while it was read: it is shorter than its central directory says",
                )
                .range(pos, end)
                .values(end, pos),
            );
        }
        let mut inspection = Inspection {
            format: self.format.into(),
            ..Inspection::default()
        };
        let views = self.archive_views();
        // DCP loads its byte items with weights_only=False; a torch file is judged by
        // torch.load's default.
        let reader = match self.format {
            "dcp_data" => torch::Reader::Pickle,
            _ => torch::Reader::WeightsOnly,
        };
        let mut more =
            findings::archive_findings(&self.path, &self.settings, &views, reader, &mut inspection);
        inspection.findings = std::mem::take(&mut self.findings);
        inspection.findings.append(&mut more);
        inspection
    }
}

/// The shape of the one tensor a storage holds, when the zero-run judgement can use it:
/// exactly one tensor of that name, of the storage's dtype, whose elements fill the
/// storage exactly (so it starts at its first byte): the shape as laid out in the
/// storage (a tensor saved transposed has its dimensions ordered by stride) and true, or
/// when the strides are unknown or not dense, the shape and false (every dimension may
/// then hold the rows, [`TensorScan::with_shape`]).
/// Storages shared by several tensors, views of part of a storage and unknown sizes get
/// no shape, and their zero runs stay warnings.
pub(super) fn sole_shape(c: &Contents, s: &torch::Storage) -> Option<(Vec<u64>, bool)> {
    let [name] = s.tensors.as_slice() else {
        return None;
    };
    let mut views = c.views.iter().filter(|v| &v.name == name);
    let view = views.next()?;
    if views.next().is_some() || view.dtype != s.dtype {
        return None;
    }
    let size = s.dtype?.size();
    let bytes = view
        .shape
        .iter()
        .try_fold(size, |acc, &d| acc.checked_mul(d))?;
    if Some(bytes) != s.bytes {
        return None;
    }
    // The layout in the storage: the dimensions (those of 1 left out, torch gives them
    // any stride) by decreasing stride must have row-major strides from offset 0; a
    // transposed tensor's dimensions are then ordered as the storage holds them.
    let mut dims: Vec<(u64, u64)> = match &view.stride {
        Some(stride) if stride.len() == view.shape.len() && view.offset == Some(0) => view
            .shape
            .iter()
            .copied()
            .zip(stride.iter().copied())
            .filter(|&(d, _)| d != 1)
            .collect(),
        _ => return Some((view.shape.clone(), false)),
    };
    dims.sort_by_key(|&(_, st)| std::cmp::Reverse(st));
    let mut want = 1u64;
    let mut dense = true;
    for &(d, st) in dims.iter().rev() {
        dense &= st == want;
        want = want.saturating_mul(d);
    }
    if dense {
        Some((dims.into_iter().map(|(d, _)| d).collect(), true))
    } else {
        Some((view.shape.clone(), false))
    }
}

/// What the per-archive checks in [`super::findings`] look at.
impl ZipInspector {
    /// Every archive with its members and what the read saw of them.
    fn archive_views(&self) -> Vec<ArchiveView<'_>> {
        let mut views: Vec<ArchiveView<'_>> = self
            .archives
            .iter()
            .enumerate()
            .map(|(i, a)| ArchiveView {
                label: self.labels.get(i).and_then(Option::as_deref),
                contents: a.contents.as_ref(),
                pickle_error: a.pickle_error.as_ref(),
                pickle_seen: a.pickle_seen,
                byteorder: a.byteorder.as_deref(),
                members: Vec::new(),
            })
            .collect();
        for (i, m) in self.members.iter().enumerate() {
            let archive = &self.archives[m.entry.archive];
            let seen = archive
                .seen
                .iter()
                .find(|s| s.member == i)
                .map(|s| (s.start, s.end, s.crc, s.scan.as_ref()));
            views[m.entry.archive].members.push(MemberView {
                name: &m.entry.name,
                storage: match &m.role {
                    Role::Storage(k) => Some(k.as_str()),
                    _ => None,
                },
                size: m.entry.size,
                crc: m.entry.crc,
                seen,
            });
        }
        views
    }
}
