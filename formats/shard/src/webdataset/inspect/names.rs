//! Member names: the full name (name field, ustar prefix) and the grouping of regular
//! members into samples the way webdataset does it.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use shardsmith_manifest::FindingKind;

use super::TarInspector;
use crate::naming::is_meta_name;
use crate::webdataset::ustar::{B, cstr};

impl TarInspector {
    /// Name from the name field (and the ustar prefix, which wids ignores).
    pub(super) fn header_name(&mut self, block: &[u8; B], at: u64) -> String {
        let name = cstr(&block[..100]);
        let posix = &block[257..263] == b"ustar\0";
        let prefix = if posix { cstr(&block[345..500]) } else { &[] };
        let full: Vec<u8> = if prefix.is_empty() {
            name.to_vec()
        } else {
            [prefix, b"/", name].concat()
        };
        let text = String::from_utf8_lossy(&full).into_owned();
        if !prefix.is_empty() {
            self.error(
                FindingKind::LongName,
                at,
                format!("member `{text}` puts part of its name in the ustar prefix field: wids reads only the 100-byte name field and mis-keys it"),
            );
        }
        if std::str::from_utf8(&full).is_err() {
            self.error(
                FindingKind::BadName,
                at,
                format!("member name `{text}` is not valid UTF-8: wids cannot read it"),
            );
        }
        text
    }

    /// Groups a regular member into samples the way webdataset does.
    pub(super) fn on_member(&mut self, name: &str, at: u64) {
        if is_meta_name(name) {
            self.warning(
                FindingKind::BadName,
                at,
                format!("member `{name}` looks like `__meta__`: webdataset skips it"),
            );
            return;
        }
        let base_start = name.rfind('/').map_or(0, |i| i + 1);
        let base = &name[base_start..];
        let Some(dot) = base.find('.').filter(|_| !base.starts_with('.')) else {
            self.error(
                FindingKind::NoExtension,
                at,
                format!("member `{name}` has no extension after its basename: webdataset drops it and wids keys it differently"),
            );
            return;
        };
        let key = &name[..base_start + dot];
        let ext = &base[dot + 1..];
        if ext.bytes().any(|b| b.is_ascii_uppercase()) {
            self.warning(
                FindingKind::BadName,
                at,
                format!("member `{name}` has an upper-case extension: webdataset calls the field `{}`, wids `.{ext}`", ext.to_lowercase()),
            );
        }
        if self.current.as_deref() != Some(key) {
            let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
            if !self.seen.insert(hash) {
                self.error(
                    FindingKind::SplitSample,
                    at,
                    format!("files of sample `{key}` are not contiguous: readers return two samples with this key"),
                );
            }
            self.samples += 1;
            if self.first_key.is_none() {
                self.first_key = Some(key.to_string());
            }
            self.last_key = Some(key.to_string());
            self.current = Some(key.to_string());
            self.fields.clear();
        }
        let field = ext.to_lowercase();
        if self.fields.contains(&field) {
            self.error(
                FindingKind::DuplicateField,
                at,
                format!("sample `{key}` has a second `{field}` member (`{name}`): webdataset raises an error, wids keeps only one"),
            );
        } else {
            self.fields.push(field);
        }
    }
}
