//! DCP data files (`__R_I.distcp`). Saved with the default `TORCH_SAVE` format a file
//! is a concatenation of complete torch zips, one per item; saved with
//! `serialization_format=SAFETENSORS` its tensors sit in one safetensors blob after the
//! zips of the non-tensor items (torch 2.15), at the offset `.metadata` records for
//! them. Both parts are checked in the one pass.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::json;
use shardsmith_manifest::{Inspection, Inspector};

use super::pickled::MAX_PICKLE_FILE;
use super::report::Settings;
use super::safetensors::{SafetensorsInspector, is_safetensors};
use super::zip::{self, Located};
use super::zipstream::ZipInspector;
use super::{pickle, torch};

/// Locates the parts of the DCP data file `rel` (under `root`, `size` bytes): its zip
/// archives and, if any, the start of its safetensors blob.
pub fn locate(
    root: &Path,
    rel: &str,
    file: &mut File,
    size: u64,
    head: &[u8],
) -> (Located, Option<u64>) {
    let located = zip::locate(file, size, true);
    if located.damage.is_none() {
        return (located, None);
    }
    let blob = blob_from_metadata(root, rel, file, size)
        .or_else(|| is_safetensors(head, size).then_some(0));
    match blob {
        Some(base) => (zip::locate(file, base, true), Some(base)),
        None => (located, None),
    }
}

/// The offset of a safetensors blob that `.metadata` points items of `rel` at.
fn blob_from_metadata(root: &Path, rel: &str, file: &mut File, size: u64) -> Option<u64> {
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    let meta = root.join(dir).join(".metadata");
    if std::fs::metadata(&meta).ok()?.len() > MAX_PICKLE_FILE {
        return None;
    }
    let bytes = std::fs::read(meta).ok()?;
    let p = pickle::parse(&bytes).ok()?;
    let mut offsets: Vec<u64> = torch::dcp_storage(&p)
        .into_iter()
        .filter(|(_, file_name, ..)| file_name == name)
        .map(|(_, _, offset, _)| offset)
        .filter(|&o| o < size)
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    offsets.into_iter().find(|&offset| {
        let mut head = [0u8; 16];
        file.seek(SeekFrom::Start(offset)).is_ok()
            && file.read_exact(&mut head).is_ok()
            && is_safetensors(&head, size - offset)
    })
}

/// Checks a DCP data file: its zips, and its safetensors blob when it has one.
pub struct DcpDataInspector {
    zip: ZipInspector,
    blob: Option<(u64, SafetensorsInspector)>,
    pos: u64,
}

impl DcpDataInspector {
    /// A checker for `rel` whose parts were located by [`locate`].
    pub fn new(rel: &str, located: Located, blob: Option<u64>, settings: Settings) -> Self {
        let blob = blob.map(|base| {
            let shifted = Settings {
                size: settings.size - base,
                scan_values: settings.scan_values,
                holes: settings
                    .holes
                    .iter()
                    .filter(|h| h.1 > base)
                    .map(|&(s, e)| (s.saturating_sub(base), e - base))
                    .collect(),
            };
            (
                base,
                SafetensorsInspector::new(rel, shifted).at_file_offset(base),
            )
        });
        Self {
            zip: ZipInspector::new(rel, "dcp_data", located, settings),
            blob,
            pos: 0,
        }
    }
}

impl Inspector for DcpDataInspector {
    fn update(&mut self, data: &[u8]) {
        self.zip.update(data);
        if let Some((base, st)) = self.blob.as_mut() {
            let end = self.pos + data.len() as u64;
            if end > *base {
                let skip = base.saturating_sub(self.pos) as usize;
                st.update(&data[skip..]);
            }
        }
        self.pos += data.len() as u64;
    }

    fn finish(self: Box<Self>) -> Inspection {
        let this = *self;
        let mut inspection = Box::new(this.zip).finish();
        if let Some((base, st)) = this.blob {
            let blob = Box::new(st).finish();
            for mut f in blob.findings {
                f.offset = f.offset.map(|o| o + base);
                f.end = f.end.map(|e| e + base);
                inspection.findings.push(f);
            }
            let mut names = inspection
                .facts
                .remove("tensors")
                .unwrap_or_else(|| json!([]));
            if let (Some(names), Some(more)) = (
                names.as_array_mut(),
                blob.facts.get("tensors").and_then(|t| t.as_array()),
            ) {
                names.extend(more.iter().cloned());
            }
            inspection.facts.insert("tensors".into(), names);
            inspection
                .facts
                .insert("safetensors_at".into(), json!(base));
        }
        inspection
    }
}
