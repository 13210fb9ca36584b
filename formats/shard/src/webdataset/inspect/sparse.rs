//! Regular members in `verify`'s walk, GNU sparse files among them: the layout (sizes,
//! map) from the shared parsers, the extended sparse headers and the format 1.0 map text
//! read block by block, each map checked entry by entry as `tarfile` will expand it,
//! nothing kept per entry (a map of any length costs no memory).
//!
//! A consistent sparse member is not an error: `tarfile` and webdataset read it whole,
//! its holes expanded. wids does not, and the warning says what it does instead. A map
//! that contradicts itself or the stored bytes is an error; the walk goes on past the
//! member's stored bytes, where `tarfile` goes on too.

use shardsmith_manifest::FindingKind;

use super::TarInspector;
use super::state::{Member, Sparse, State};
use crate::webdataset::ustar::pax::PaxInfo;
use crate::webdataset::ustar::sparse::{
    MAX_SEGMENTS, MapCheck, MapText, SparseError, old_gnu_extension,
};
use crate::webdataset::ustar::{B, BLOCK, Layout, MapFrom, cstr, layout};

impl TarInspector {
    fn sparse_error(&mut self, name: &str, at: u64, e: &SparseError) {
        self.error(
            FindingKind::BadHeader,
            at,
            format!("GNU sparse member `{name}`: {e}"),
        );
    }

    /// Starts a regular member's data (`member.size`: its stored bytes, without the
    /// layout's corrections yet).
    pub(super) fn on_regular(
        &mut self,
        header: &[u8; B],
        header_size: u64,
        pax: PaxInfo,
        member: Member,
    ) {
        let at = member.header_at;
        let layout = layout(header, header_size, pax).unwrap_or_else(|e| {
            self.sparse_error(&member.name, at, &e);
            // Walked on as `tarfile` walks on: past the stored bytes.
            Layout {
                stored: member.size,
                size: member.size,
                extension: header[156] == b'S' && header[482] != 0,
                map: None,
            }
        });
        let mut sparse = Sparse {
            member,
            check: None,
            header_map: false,
            text: false,
        };
        if let Some(from) = &layout.map {
            self.warn_wids(header, &sparse.member, &layout, from);
            let mut check = MapCheck::new(layout.size);
            let mut failed = None;
            if let MapFrom::Header(entries) | MapFrom::Records(_, entries) = from {
                failed = entries
                    .iter()
                    .find_map(|&(offset, len)| check.push(offset, len).err());
            }
            match failed {
                Some(e) => self.sparse_error(&sparse.member.name, at, &e),
                None => sparse.check = Some(check),
            }
            sparse.header_map = matches!(from, MapFrom::Header(_));
            sparse.text = *from == MapFrom::Data;
        }
        if layout.extension {
            self.state = State::SparseExtension(Box::new(sparse));
        } else {
            self.after_extension(sparse);
        }
    }

    /// What wids makes of a sparse member, which `tarfile` and webdataset read whole.
    fn warn_wids(&mut self, header: &[u8; B], member: &Member, layout: &Layout, from: &MapFrom) {
        let described = format!(
            "member `{}` is a GNU sparse file ({}; {} bytes, {} stored): tarfile and webdataset read it whole, its holes expanded, but wids",
            member.name,
            from.describe(),
            layout.size,
            layout.stored
        );
        let message = if header[156] == b'S' {
            let rest = if layout.extension {
                ", and walks on into its extended sparse headers, misreading the rest of the shard"
            } else {
                ""
            };
            format!("{described} skips members of type `S`{rest}")
        } else {
            format!(
                "{described} ignores PAX records and reads `{}` as its {} stored bytes",
                String::from_utf8_lossy(cstr(&header[..100])),
                layout.stored
            )
        };
        self.warning(FindingKind::NonRegularMember, member.header_at, message);
    }

    /// One extended sparse header.
    pub(super) fn on_extension(&mut self, mut sparse: Box<Sparse>, block: &[u8; B], at: u64) {
        let (entries, more) = old_gnu_extension(block);
        if sparse.header_map
            && let Some(check) = &mut sparse.check
            && let Some(e) = entries
                .iter()
                .find_map(|&(offset, len)| check.push(offset, len).err())
        {
            sparse.check = None;
            self.sparse_error(&sparse.member.name, sparse.member.header_at, &e);
        }
        sparse.member.data_at = at + BLOCK;
        if more {
            self.state = State::SparseExtension(sparse);
        } else {
            self.after_extension(*sparse);
        }
    }

    fn after_extension(&mut self, sparse: Sparse) {
        if sparse.text {
            self.state = State::SparseText(Box::new(sparse), MapText::new());
        } else {
            self.sparse_data(sparse);
        }
    }

    /// One block of a format 1.0 map.
    pub(super) fn on_map_text(
        &mut self,
        mut sparse: Box<Sparse>,
        mut text: MapText,
        block: &[u8; B],
        at: u64,
    ) {
        let (name, header_at, stored) = (
            sparse.member.name.clone(),
            sparse.member.header_at,
            sparse.member.size,
        );
        if text.consumed() >= stored {
            // This block is past the member: `tarfile` would read it as map, the
            // walk goes on with it as the next header.
            self.sparse_error(&name, header_at, &SparseError::MapPastData { stored });
            self.state = State::Header;
            self.on_block(block, at);
            return;
        }
        let mut check = sparse.check.take();
        let read = text.block(block, |offset, len| match &mut check {
            Some(check) => check.push(offset, len).map(drop),
            None => Ok(()),
        });
        let done = match read {
            Ok(false) => {
                sparse.check = check;
                self.state = State::SparseText(sparse, text);
                return;
            }
            Ok(true) => {
                sparse.check = check;
                true
            }
            Err(e) => {
                self.sparse_error(&name, header_at, &e);
                false
            }
        };
        let consumed = text.consumed();
        if consumed > stored {
            if done {
                self.sparse_error(&name, header_at, &SparseError::MapPastData { stored });
            }
            // The member's padded bytes end with this block.
            self.state = State::Header;
            return;
        }
        sparse.member.data_at += consumed;
        sparse.member.size -= consumed;
        self.sparse_data(*sparse);
    }

    /// The map is read: its stored segments follow.
    fn sparse_data(&mut self, sparse: Sparse) {
        let Sparse { member, check, .. } = sparse;
        if let Some(check) = check {
            match check.finish(member.size) {
                Err(e) => self.sparse_error(&member.name, member.header_at, &e),
                Ok(()) if check.segments() > MAX_SEGMENTS => self.warning(
                    FindingKind::NonRegularMember,
                    member.header_at,
                    format!(
                        "GNU sparse member `{}` has {} data segments, more than the {MAX_SEGMENTS} `ls`, `cat` and `pack` keep: they leave its sample out",
                        member.name,
                        check.segments()
                    ),
                ),
                Ok(()) => {}
            }
        }
        self.state = State::Data {
            remaining: member.size,
            member,
        };
        self.skip_empty();
    }
}
