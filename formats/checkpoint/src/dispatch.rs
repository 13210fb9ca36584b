//! Which checker reads a file: by content (magic bytes), by the format a manifest
//! recorded, or by name; a few small positioned reads before the pass locate a zip's
//! central directory and map filesystem holes.

use std::path::{Path, PathBuf};

use shardsmith_manifest::{FileContext, Finding, FindingKind, Inspection, Inspector};

use crate::legacy::{self, LEGACY_MAGIC};
use crate::names::{is_checkpoint_name, is_temp_leftover};
use crate::pickle_inspector::{PickleInspector, PickleKind};
use crate::report::Settings;
use crate::{content, dcp, safetensors, zip};

/// Options of the checkpoint checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Count NaN and Inf in every float tensor (bf16 and fp8 included).
    pub scan_values: bool,
}

/// Format names recorded in manifests for checkpoint files.
pub const FORMATS: &[&str] = &[
    "safetensors",
    "torch_zip",
    "dcp_data",
    "torch_legacy",
    "dcp_metadata",
    "pickle",
];

fn is_torch_zip(head: &[u8]) -> bool {
    if !head.starts_with(b"PK\x03\x04") || head.len() < 30 {
        return false;
    }
    let n = usize::from(u16::from_le_bytes([head[26], head[27]]));
    head.get(30..30 + n)
        .is_some_and(|name| name.ends_with(b"data.pkl") || name.ends_with(b".format_version"))
}

/// A checker for a checkpoint file, or `None` when the file is not one.
pub fn inspector_for(
    ctx: &FileContext<'_>,
    head: &[u8],
    options: CheckpointOptions,
) -> Option<Box<dyn Inspector>> {
    let rel = ctx.path;
    if is_temp_leftover(rel) {
        return Some(Box::new(Fixed::new(
            "leftover",
            Finding::warning(
                FindingKind::LeftoverTempFile,
                rel,
                "temporary file of an interrupted checkpoint save (the save never completed, or was not cleaned up); delete it once no save is running",
            ),
        )));
    }
    let recorded = ctx
        .entry
        .and_then(|e| e.format.as_deref())
        .filter(|f| FORMATS.contains(f));
    let checkpointish = recorded.is_some() || is_checkpoint_name(rel);
    let full = ctx.root.join(rel);
    let size = std::fs::metadata(&full).map_or(head.len() as u64, |m| m.len());
    if checkpointish && let Some(what) = content::wrong_content(head, size) {
        return Some(Box::new(Fixed::new(
            "wrong_content",
            Finding::error(
                FindingKind::WrongContent,
                rel,
                format!("the file is {what}"),
            ),
        )));
    }
    let file = Candidate {
        root: ctx.root,
        rel,
        full,
        size,
        options,
        recorded,
        checkpointish,
    };
    file.inspector(head)
}

/// A file that may be a checkpoint, once leftovers and wrong content are ruled out.
struct Candidate<'a> {
    root: &'a Path,
    rel: &'a str,
    full: PathBuf,
    size: u64,
    options: CheckpointOptions,
    /// The checkpoint format a manifest recorded for it.
    recorded: Option<&'a str>,
    /// Recorded as a checkpoint format, or named like a checkpoint file.
    checkpointish: bool,
}

impl Candidate<'_> {
    /// The checker its content (magic bytes), recorded format or name asks for.
    fn inspector(&self, head: &[u8]) -> Option<Box<dyn Inspector>> {
        let (rel, recorded) = (self.rel, self.recorded);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        let is_pickle =
            head.first() == Some(&0x80) && head.get(1).is_some_and(|p| (2..=5).contains(p));
        if ext == "distcp" || recorded == Some("dcp_data") {
            let mut file = std::fs::File::open(&self.full).ok()?;
            let plan = dcp::locate(self.root, rel, &mut file, self.size, head);
            return Some(Box::new(dcp::DcpDataInspector::new(
                rel,
                plan,
                self.settings(),
            )));
        }
        if head.starts_with(LEGACY_MAGIC) {
            return Some(Box::new(legacy::LegacyInspector::new(rel)));
        }
        if is_torch_zip(head) || (self.checkpointish && head.starts_with(b"PK\x03\x04")) {
            return self.zip("torch_zip", false);
        }
        if safetensors::is_safetensors(head, self.size)
            || ext == "safetensors"
            || recorded == Some("safetensors")
        {
            return Some(Box::new(safetensors::SafetensorsInspector::new(
                rel,
                self.settings(),
            )));
        }
        if name == ".metadata" || recorded == Some("dcp_metadata") {
            return self.pickle(PickleKind::DcpMetadata);
        }
        if is_pickle && (self.checkpointish || matches!(ext, "pkl" | "pickle")) {
            return self.pickle(PickleKind::Plain);
        }
        if self.checkpointish {
            return Some(Box::new(no_known_format(rel, head)));
        }
        if recorded == Some("torch_zip") {
            return self.zip("torch_zip", false);
        }
        None
    }

    fn settings(&self) -> Settings {
        Settings {
            size: self.size,
            scan_values: self.options.scan_values,
            holes: content::holes(&self.full),
        }
    }

    /// A zip checker, the archives located from the file's end first.
    fn zip(&self, format: &'static str, many: bool) -> Option<Box<dyn Inspector>> {
        let located = match std::fs::File::open(&self.full) {
            Ok(mut f) => zip::locate(&mut f, self.size, many),
            Err(_) => return None,
        };
        Some(Box::new(zip::ZipInspector::new(
            self.rel,
            format,
            located,
            self.settings(),
        )))
    }

    fn pickle(&self, kind: PickleKind) -> Option<Box<dyn Inspector>> {
        Some(Box::new(PickleInspector::new(self.rel, kind)))
    }
}

/// The finding of a file named like a checkpoint that holds no format shardsmith knows.
fn no_known_format(rel: &str, head: &[u8]) -> Fixed {
    let shown = String::from_utf8_lossy(&head[..head.len().min(16)]).into_owned();
    Fixed::new(
        "wrong_content",
        Finding::error(
            FindingKind::WrongContent,
            rel,
            format!(
                "named like a checkpoint but holds no checkpoint format shardsmith knows (first bytes {shown:?})"
            ),
        ),
    )
}

/// An inspector that reads nothing and reports one finding.
struct Fixed {
    format: &'static str,
    finding: Finding,
}

impl Fixed {
    fn new(format: &'static str, finding: Finding) -> Self {
        Self { format, finding }
    }
}

impl Inspector for Fixed {
    fn update(&mut self, _data: &[u8]) {}

    fn finish(self: Box<Self>) -> Inspection {
        Inspection {
            format: self.format.into(),
            findings: vec![self.finding],
            ..Inspection::default()
        }
    }
}
