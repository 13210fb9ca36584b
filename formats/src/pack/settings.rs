//! The settings of a `pack` run: checked before any I/O, and the subset that decides
//! the output bytes recorded in the manifest.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::content::Validation;
use crate::format::ShardFormat;
use crate::{Error, Result};

/// Settings of a `pack` run, validated by [`PackSettings::check`].
#[derive(Clone, Debug)]
pub struct PackSettings {
    /// Largest shard file, in bytes (a single larger sample gets a shard of its own).
    pub shard_size: u64,
    /// Most samples per shard.
    pub max_samples: Option<u64>,
    /// Shard name prefix.
    pub prefix: String,
    /// Shuffle the samples with this seed before sharding.
    pub shuffle_seed: Option<u64>,
    /// Content checks.
    pub validation: Validation,
    /// Every skipped input is an error.
    pub strict: bool,
    /// Replace an output that holds a different dataset.
    pub force: bool,
    /// Pack only part `rank` of `world_size` contiguous parts of the sample list (the
    /// same list, in the same order, for every rank), for `merge` to combine.
    pub part: Option<(u32, u32)>,
    /// Pack only these fields (all when `None`); other files are not inputs of this run.
    pub fields: Option<std::collections::BTreeSet<String>>,
}

impl Default for PackSettings {
    fn default() -> Self {
        Self {
            shard_size: 256 << 20,
            max_samples: None,
            prefix: "shard".into(),
            shuffle_seed: None,
            validation: Validation::Cheap,
            strict: false,
            force: false,
            part: None,
            fields: None,
        }
    }
}

/// Smallest accepted shard size.
pub const MIN_SHARD_SIZE: u64 = 4096;

impl PackSettings {
    /// Checks the settings before any I/O.
    pub fn check(&self) -> Result<()> {
        if self.shard_size < MIN_SHARD_SIZE {
            return Err(Error::Setting(format!(
                "shard size {} bytes is too small (at least {MIN_SHARD_SIZE} bytes)",
                self.shard_size
            )));
        }
        if let Some((rank, world)) = self.part
            && (world == 0 || rank >= world)
        {
            return Err(Error::Setting(format!(
                "--rank {rank} must be below --world-size {world}"
            )));
        }
        if self.max_samples == Some(0) {
            return Err(Error::Setting("--max-samples must be at least 1".into()));
        }
        if !crate::naming::valid_prefix(&self.prefix) {
            return Err(Error::Setting(format!(
                "prefix `{}` must be ASCII letters, digits, `-`, `_` or `.` and not start with a dot (shard URLs are brace-expanded by readers)",
                self.prefix
            )));
        }
        Ok(())
    }

    /// The settings that decide the output bytes, as recorded in the manifest.
    pub fn options(&self, format: &dyn ShardFormat) -> BTreeMap<String, Value> {
        let mut options = format.options();
        options.insert("shard_size".into(), Value::from(self.shard_size));
        options.insert(
            "max_samples".into(),
            self.max_samples.map_or(Value::Null, Value::from),
        );
        options.insert("prefix".into(), Value::from(self.prefix.clone()));
        options.insert(
            "shuffle_seed".into(),
            self.shuffle_seed.map_or(Value::Null, Value::from),
        );
        if let Some(fields) = &self.fields {
            options.insert(
                "fields".into(),
                Value::from(fields.iter().cloned().collect::<Vec<_>>()),
            );
        }
        if let Some((rank, world)) = self.part {
            options.insert(
                "part".into(),
                serde_json::json!({"rank": rank, "world_size": world}),
            );
        }
        options.insert(
            "validation".into(),
            serde_json::to_value(self.validation).expect("validation serializes"),
        );
        options
    }
}
