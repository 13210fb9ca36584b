//! Where every sample and member of one plain tar shard lies ([`Listing`]): what the
//! indexes of DALI and Megatron-Energon are made of. The tar writer knows it while it
//! writes ([`Listing::member`] per member it writes); `index` and `verify` learn it from
//! the inspector's one read of an existing shard.

use std::fmt::Write as _;

use super::super::ustar::BLOCK;

/// One member of a sample: its extension and where its data lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Everything after the first dot of the member's file name (`jpg`, `seg.png`).
    pub ext: String,
    /// Byte offset of the member's data (after its header).
    pub data_at: u64,
    /// Bytes of data.
    pub size: u64,
}

/// One sample: consecutive members with the same key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedSample {
    /// The key: the member name up to the first dot of its file name.
    pub key: String,
    /// Offset of the sample's first header (an extension header before it included).
    pub start: u64,
    /// Its members, in tar order.
    pub parts: Vec<Part>,
}

/// The samples of one shard, in tar order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The samples.
    pub samples: Vec<ListedSample>,
    /// Where the archive's last entry ends, padding included (where the end-of-archive
    /// blocks start): the end of Energon's last sample.
    pub end: u64,
}

/// Splits a member name into key and extension as Energon, DALI and webdataset do:
/// at the first dot of the file name. `None` for a name whose file name has no dot or
/// starts with one (no sample reads it).
pub fn split_member(name: &str) -> Option<(&str, &str)> {
    let base_start = name.rfind('/').map_or(0, |i| i + 1);
    let base = &name[base_start..];
    let dot = base.find('.').filter(|&d| d > 0)?;
    Some((&name[..base_start + dot], &base[dot + 1..]))
}

/// True for members Energon skips: a first path part named like `__meta__` (its
/// pattern `__[^/]*__($|/)`, matched at the start: `__meta__`, `__cache__/y.txt`, but
/// not `__meta__.json`).
pub fn is_meta_member(name: &str) -> bool {
    let first = name.split('/').next().unwrap_or(name);
    first.len() >= 4 && first.starts_with("__") && first.ends_with("__")
}

impl Listing {
    /// Adds a regular member named `name` whose first header (an extension header before
    /// it included) is at `start` and whose `size` bytes of data start at `data_at`.
    /// Members that webdataset drops are left out: no extension, a hidden file name
    /// (which DALI skips), a `__meta__` first part (which Energon skips).
    pub fn member(&mut self, name: &str, start: u64, data_at: u64, size: u64) {
        let base = &name[name.rfind('/').map_or(0, |i| i + 1)..];
        if is_meta_member(name) || base.starts_with('.') {
            return;
        }
        if let Some((key, ext)) = split_member(name) {
            self.part(key, ext, start, data_at, size);
        }
    }

    /// Adds member `key.ext` (a key that splits back as written, as the tar writer's do).
    pub fn part(&mut self, key: &str, ext: &str, start: u64, data_at: u64, size: u64) {
        let part = Part {
            ext: ext.to_string(),
            data_at,
            size,
        };
        match self.samples.last_mut() {
            Some(last) if last.key == key => last.parts.push(part),
            _ => self.samples.push(ListedSample {
                key: key.to_string(),
                start,
                parts: vec![part],
            }),
        }
    }

    /// Energon's bytes of sample `i`: from its first header to the next sample's first
    /// header, or to the end of the archive's entries for the last sample.
    pub fn sample_size(&self, i: usize) -> u64 {
        let end = self.samples.get(i + 1).map_or(self.end, |next| next.start);
        end.saturating_sub(self.samples[i].start)
    }

    /// The index `wds2idx` writes for this shard, which DALI's `fn.readers.webdataset`
    /// takes in `index_paths`: `v1.2 N`, then one line per sample listing each member as
    /// `ext data_offset size name`.
    pub fn dali_bytes(&self) -> Vec<u8> {
        let mut text = format!("v1.2 {}\n", self.samples.len());
        for sample in &self.samples {
            for (i, part) in sample.parts.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                let _ = write!(
                    text,
                    "{} {} {} {}.{}",
                    part.ext, part.data_at, part.size, sample.key, part.ext
                );
            }
            text.push('\n');
        }
        text.into_bytes()
    }

    /// Energon's `NAME.tar.idx`: little-endian u64 offsets of each sample's first header,
    /// then where the archive's entries end.
    pub fn tar_idx_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(8 * (self.samples.len() + 1));
        for sample in &self.samples {
            bytes.extend_from_slice(&sample.start.to_le_bytes());
        }
        bytes.extend_from_slice(&self.end.to_le_bytes());
        bytes
    }

    /// The compact text kept in a shard's facts by the writer: one line per sample,
    /// `key` then `ext size` pairs, tab-separated, each token escaped
    /// ([`escape`]). Offsets are not kept: the writer's members follow each other with
    /// one plain header each, from byte 0.
    pub fn compact(&self) -> String {
        let mut text = String::new();
        for sample in &self.samples {
            compact_line(
                &mut text,
                &sample.key,
                sample.parts.iter().map(|p| (p.ext.as_str(), p.size)),
            );
        }
        text
    }

    /// The listing of a shard written by shardsmith's tar writer from its
    /// [`Listing::compact`] text; `None` when the text is not one.
    pub fn from_compact(text: &str) -> Option<Self> {
        let mut listing = Listing::default();
        let mut pos = 0u64;
        for line in text.lines() {
            let mut tokens = line.split('\t');
            let key = unescape(tokens.next()?)?;
            let mut parts = Vec::new();
            let start = pos;
            while let Some(ext) = tokens.next() {
                let size: u64 = tokens.next()?.parse().ok()?;
                parts.push(Part {
                    ext: unescape(ext)?,
                    data_at: pos + BLOCK,
                    size,
                });
                pos += BLOCK + size.div_ceil(BLOCK) * BLOCK;
            }
            if parts.is_empty() {
                return None;
            }
            listing.samples.push(ListedSample { key, start, parts });
        }
        listing.end = pos;
        Some(listing)
    }
}

/// Appends the [`Listing::compact`] line of a sample: its key, then each member's
/// extension and size (what the tar writer records as it writes).
pub fn compact_line<'a>(out: &mut String, key: &str, parts: impl Iterator<Item = (&'a str, u64)>) {
    escape(key, out);
    for (ext, size) in parts {
        out.push('\t');
        escape(ext, out);
        let _ = write!(out, "\t{size}");
    }
    out.push('\n');
}

/// Escapes `%`, tab and newline as `%25`, `%09`, `%0A` (the separators of
/// [`Listing::compact`]).
fn escape(token: &str, out: &mut String) {
    for c in token.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\t' => out.push_str("%09"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
}

fn unescape(token: &str) -> Option<String> {
    if !token.contains('%') {
        return Some(token.to_string());
    }
    let mut out = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3)?;
        out.push(match code {
            "25" => '%',
            "09" => '\t',
            "0A" => '\n',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written() -> Listing {
        // As the writer lays them out: a.jpg (3 bytes), a.txt (512), b.cls (0).
        let mut listing = Listing::default();
        listing.member("d/a.jpg", 0, 512, 3);
        listing.member("d/a.txt", 1024, 1536, 512);
        listing.member("d/b.cls", 2048, 2560, 0);
        listing.end = 2560;
        listing
    }

    #[test]
    fn members_group_into_samples_and_readers_skipped_ones_are_left_out() {
        let mut listing = written();
        listing.member("__cache__/y.jpg", 2560, 3072, 1);
        listing.member("noext", 3584, 4096, 1);
        listing.member("d/.hidden.txt", 4096, 4608, 1);
        listing.member("__meta__.json", 5120, 5632, 1);
        assert_eq!(listing.samples.len(), 3);
        assert_eq!(listing.samples[2].key, "__meta__");
        listing.samples.pop();
        assert_eq!(listing.samples[0].key, "d/a");
        assert_eq!(listing.samples[0].parts.len(), 2);
        assert_eq!(listing.sample_size(0), 2048);
        assert_eq!(listing.sample_size(1), 512);
        assert_eq!(split_member("x/y.seg.png"), Some(("x/y", "seg.png")));
        assert_eq!(split_member("x.y/.hidden"), None);
    }

    #[test]
    fn dali_and_energon_bytes() {
        let listing = written();
        assert_eq!(
            String::from_utf8(listing.dali_bytes()).unwrap(),
            "v1.2 2\njpg 512 3 d/a.jpg txt 1536 512 d/a.txt\ncls 2560 0 d/b.cls\n"
        );
        let idx = listing.tar_idx_bytes();
        let words: Vec<u64> = idx
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(words, [0, 2048, 2560]);
    }

    #[test]
    fn compact_text_round_trips_and_escapes_separators() {
        let listing = written();
        assert_eq!(Listing::from_compact(&listing.compact()), Some(listing));
        let mut odd = Listing::default();
        odd.member("a%b\tc.t\nx", 0, 512, 7);
        odd.end = 1024;
        let text = odd.compact();
        assert_eq!(text.lines().count(), 1);
        assert_eq!(Listing::from_compact(&text), Some(odd));
        assert_eq!(Listing::from_compact("k\tjpg\tnot-a-number\n"), None);
        assert_eq!(Listing::from_compact("k\n"), None);
    }
}
