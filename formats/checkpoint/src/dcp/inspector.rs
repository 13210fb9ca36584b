//! The inspector of a DCP data file, once split: its zips, its safetensors blob and its
//! transformed items, each fed the bytes of its range.

use serde_json::json;
use shardsmith_manifest::{Finding, Inspection, Inspector};

use super::item::ItemCheck;
use super::plan::Plan;
use crate::report::Settings;
use crate::safetensors::SafetensorsInspector;
use crate::zip::ZipInspector;

/// The fact of a data file that has error findings of its own.
pub const DAMAGED: &str = "dcp.damaged";

/// Checks a DCP data file: its zips, its safetensors blob and its transformed items.
pub struct DcpDataInspector {
    zip: ZipInspector,
    blob: Option<(u64, SafetensorsInspector)>,
    items: Vec<ItemCheck>,
    notes: Vec<Finding>,
    pos: u64,
}

impl DcpDataInspector {
    /// A checker for `rel` split by [`super::locate`].
    pub fn new(rel: &str, plan: Plan, settings: Settings) -> Self {
        let blob = plan.blob.map(|base| {
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
        let items = plan
            .transformed
            .into_iter()
            .map(|(item, t)| ItemCheck::new(rel, item, t, settings.scan_values))
            .collect();
        Self {
            zip: ZipInspector::new(rel, "dcp_data", plan.located, settings)
                .with_labels(plan.labels),
            blob,
            items,
            notes: plan.notes,
            pos: 0,
        }
    }
}

impl Inspector for DcpDataInspector {
    fn update(&mut self, data: &[u8]) {
        self.zip.update(data);
        let end = self.pos + data.len() as u64;
        if let Some((base, st)) = self.blob.as_mut()
            && end > *base
        {
            let skip = base.saturating_sub(self.pos) as usize;
            st.update(&data[skip..]);
        }
        for item in &mut self.items {
            let (start, stop) = item.range();
            if start < end && self.pos < stop {
                item.update(self.pos, data);
            }
        }
        self.pos = end;
    }

    fn finish(self: Box<Self>) -> Inspection {
        let this = *self;
        let mut inspection = Box::new(this.zip).finish();
        inspection.findings.extend(this.notes);
        for item in this.items {
            inspection.findings.extend(item.finish());
        }
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
        // Findings leave the inspection before the layout checks run: whether the
        // file is damaged stays, so that they do not report the damage again.
        if inspection.findings.iter().any(Finding::is_error) {
            inspection.facts.insert(DAMAGED.into(), json!(true));
        }
        inspection
    }
}
