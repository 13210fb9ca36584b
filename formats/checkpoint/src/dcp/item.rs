//! One DCP item stored through transforms (a zstd frame per item with the ZStandard
//! extension), checked as `dcp.load` reads it: its stored bytes decoded as they stream
//! by, then the torch zip they decode to checked like any other (CRC-32s, `data.pkl`,
//! storages, content scans) by the same [`ZipInspector`]. Findings about the decoded
//! bytes say so and point at the item's stored bytes.

use std::io::{Read, Seek};

use shardsmith_manifest::{Finding, FindingKind, Inspector};

use super::meta::Item;
use super::transform::{DecodeError, Decoded, Decoder, Transform};
use crate::report::Settings;
use crate::zip;
use crate::zip::ZipInspector;

/// Decoded bytes read per step when checking them.
const BLOCK: usize = 1 << 20;

/// A transformed item being decoded from the data file's bytes.
pub struct ItemCheck {
    path: String,
    item: Item,
    transforms: Vec<Transform>,
    decoder: Result<Decoder, DecodeError>,
    scan_values: bool,
}

impl ItemCheck {
    /// A check of `item` of the data file `path`, stored through `transforms`.
    pub fn new(path: &str, item: Item, transforms: Vec<Transform>, scan_values: bool) -> Self {
        let decoder = Decoder::new(&transforms, item.limit);
        Self {
            path: path.to_string(),
            item,
            transforms,
            decoder,
            scan_values,
        }
    }

    /// First byte and one past the last of the stored item.
    pub fn range(&self) -> (u64, u64) {
        (self.item.offset, self.item.end())
    }

    /// The stored bytes `data`, which start at byte `at` of the file (any part of them
    /// may lie outside the item).
    pub fn update(&mut self, at: u64, data: &[u8]) {
        let (start, end) = self.range();
        let from = start.max(at);
        let to = end.min(at + data.len() as u64);
        if from < to
            && let Ok(d) = self.decoder.as_mut()
        {
            d.update(&data[(from - at) as usize..(to - at) as usize]);
        }
    }

    fn what(&self) -> String {
        let names: Vec<&str> = self.transforms.iter().map(|t| t.descriptor()).collect();
        let (start, end) = self.range();
        format!(
            "{}, stored through {} at bytes {start}..{end},",
            self.item.label(),
            names.join(" then ")
        )
    }

    /// The findings of the item, once the whole file was read.
    pub fn finish(self) -> Vec<Finding> {
        let (start, end) = self.range();
        let what = self.what();
        let decoded = match self.decoder.and_then(Decoder::finish) {
            Ok(decoded) => decoded,
            Err(e) => return vec![decode_finding(&self.path, &what, start, end, &e)],
        };
        let mut out = Vec::new();
        if decoded.trailing > 0 {
            out.push(
                Finding::warning(
                    FindingKind::TrailingData,
                    &self.path,
                    format!(
                        "{what} holds {} byte(s) after the end of its zstd frame, which dcp.load ignores (it reads one frame)",
                        decoded.trailing
                    ),
                )
                .range(end - decoded.trailing, end),
            );
        }
        let label = self.item.label();
        match check_decoded(&self.path, &label, decoded, self.scan_values) {
            Ok(inner) => out.extend(inner.into_iter().map(|mut f| {
                let place = f
                    .offset
                    .map(|o| format!(" (its byte {o})"))
                    .unwrap_or_default();
                f.message = format!("{}; in {what} once decoded{place}", f.message);
                f.offset = Some(start);
                f.end = Some(end);
                f
            })),
            Err(e) => out.push(decode_finding(&self.path, &what, start, end, &e.into())),
        }
        out
    }
}

fn decode_finding(path: &str, what: &str, start: u64, end: u64, e: &DecodeError) -> Finding {
    // Where the decoder failed, within the piece of stored bytes it was given.
    let (start, end) = match e {
        DecodeError::Invalid { from, to, .. } => (start + from, (start + to).min(end)),
        _ => (start, end),
    };
    let f = match e {
        DecodeError::Invalid { .. } => Finding::error(
            FindingKind::DecompressionFailed,
            path,
            format!("{what} cannot be decoded: {e}; dcp.load fails on it"),
        ),
        DecodeError::Truncated { .. } => Finding::error(
            FindingKind::Truncated,
            path,
            format!("{what} cannot be decoded: {e}; dcp.load fails on it"),
        ),
        DecodeError::TooLarge { .. } => Finding::warning(
            FindingKind::UnsupportedTransform,
            path,
            format!("{what} was not checked: {e}"),
        ),
        DecodeError::Io(_) => Finding::warning(
            FindingKind::UnsupportedTransform,
            path,
            format!(
                "{what} was not checked: its bytes could not be decoded into a temporary file: {e}"
            ),
        ),
    };
    f.range(start, end)
}

/// The findings of the torch zip an item decoded to, at offsets in the decoded bytes.
fn check_decoded(
    path: &str,
    label: &str,
    decoded: Decoded,
    scan_values: bool,
) -> std::io::Result<Vec<Finding>> {
    let Decoded { mut file, len, .. } = decoded;
    let located = zip::locate(&mut file, len, false);
    let settings = Settings {
        size: len,
        scan_values,
        holes: Vec::new(),
    };
    let mut zip = ZipInspector::new(path, "dcp_data", located, settings)
        .with_labels(vec![Some(label.to_string())]);
    file.rewind()?;
    let mut buf = vec![0u8; BLOCK.min(usize::try_from(len).unwrap_or(BLOCK)).max(1)];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        zip.update(&buf[..n]);
    }
    Ok(Box::new(zip).finish().findings)
}
