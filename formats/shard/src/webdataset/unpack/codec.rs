//! The compressions a WebDataset shard may have, by name and by magic bytes.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Codec {
    Gz,
    Zstd,
}

impl Codec {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Codec::Gz => "gzip",
            Codec::Zstd => "zstd",
        }
    }

    /// What the name says: `Some(None)` for a plain `.tar`, `None` for other names.
    pub(super) fn named(path: &str) -> Option<Option<Codec>> {
        if path.ends_with(".tar") {
            Some(None)
        } else if path.ends_with(".tar.gz") || path.ends_with(".tgz") {
            Some(Some(Codec::Gz))
        } else if path.ends_with(".tar.zst") || path.ends_with(".tar.zstd") {
            Some(Some(Codec::Zstd))
        } else {
            None
        }
    }

    pub(super) fn sniff(head: &[u8]) -> Option<Codec> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Codec::Gz)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Codec::Zstd)
        } else {
            None
        }
    }
}
