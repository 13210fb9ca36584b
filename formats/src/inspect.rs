//! Chooses the structural checker for a file: by the format a manifest recorded, by
//! extension, or by content (a ustar magic at byte 257).

use shardsmith_manifest::{Inspector, InspectorFactory};

use crate::format::FormatKind;

/// The inspectors of every format shardsmith knows.
pub struct Inspectors;

impl InspectorFactory for Inspectors {
    fn inspector_for(
        &self,
        path: &str,
        head: &[u8],
        recorded: Option<&str>,
    ) -> Option<Box<dyn Inspector>> {
        if let Some(name) = recorded {
            for kind in FormatKind::all() {
                let format = kind.build();
                if format.name() == name {
                    return Some(format.inspector(path));
                }
            }
        }
        let is_tar = path.ends_with(".tar") || head.get(257..262) == Some(b"ustar");
        is_tar.then(|| FormatKind::Webdataset.build().inspector(path))
    }
}
