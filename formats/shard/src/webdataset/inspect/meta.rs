//! Extension headers in `verify`'s walk: GNU long names and PAX records (parsed by the
//! parser the input walk uses), what they say about the next member, and what wids
//! makes of them.

use shardsmith_manifest::FindingKind;

use super::TarInspector;
use crate::webdataset::ustar::pax::PaxInfo;
use crate::webdataset::ustar::{MAX_META, cstr};

impl TarInspector {
    pub(super) fn finish_meta(&mut self, kind: u8, data: &[u8], size: u64, at: u64) {
        if size > MAX_META {
            self.warning(
                FindingKind::BadHeader,
                at,
                format!("extension header (type `{}`) of {size} bytes is larger than the {MAX_META} bytes shardsmith reads: its records are not checked, and `ls`, `cat` and `pack` stop on this shard", kind.escape_ascii()),
            );
            return;
        }
        match kind {
            b'L' => {
                let name = String::from_utf8_lossy(cstr(data)).into_owned();
                self.error(
                    FindingKind::LongName,
                    at,
                    format!("member `{name}` uses a GNU long-name record: wids ignores it and mis-keys the member"),
                );
                self.pending_name.get_or_insert(name);
            }
            b'x' | b'X' | b'g' => {
                let mut info = match PaxInfo::parse(data) {
                    Ok(info) => info,
                    Err(e) => {
                        self.error(
                            FindingKind::BadHeader,
                            at,
                            format!("PAX extended header is malformed: {e}"),
                        );
                        return;
                    }
                };
                if kind == b'g' {
                    // Global records: nothing the grouping uses.
                    return;
                }
                if let Some(name) = info.name.take() {
                    let name = String::from_utf8_lossy(&name).into_owned();
                    // A sparse member's name (`GNU.sparse.name`) gets its own finding.
                    if info.sparse.is_none() {
                        self.error(
                            FindingKind::LongName,
                            at,
                            format!("member `{name}` takes its name from a PAX record: wids ignores PAX records and mis-keys the member"),
                        );
                    }
                    self.pending_name.get_or_insert(name);
                }
                if let Some(size) = info.stored {
                    self.error(
                        FindingKind::BadHeader,
                        at,
                        format!("a PAX record sets the next member's size to {size}: wids ignores it and reads the wrong bytes"),
                    );
                }
                self.pending = std::mem::take(&mut self.pending).then(info);
            }
            _ => {}
        }
    }
}
