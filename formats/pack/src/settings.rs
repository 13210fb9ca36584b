//! The settings of a `pack` run: checked before any I/O, and the subset that decides
//! the output bytes recorded in the manifest.

use std::collections::BTreeMap;

use serde_json::Value;

use shardsmith_shard::content::Validation;
use shardsmith_shard::{FormatChoice, ShardFormat};

use crate::{Error, Result};

/// Settings of a `pack` run, validated by [`PackSettings::check`].
#[derive(Clone, Debug)]
pub struct PackSettings {
    /// Most samples per shard.
    pub max_samples: Option<u64>,
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
            max_samples: None,
            shuffle_seed: None,
            validation: Validation::Cheap,
            strict: false,
            force: false,
            part: None,
            fields: None,
        }
    }
}

impl PackSettings {
    /// Checks the settings before any I/O.
    pub fn check(&self) -> Result<()> {
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
        Ok(())
    }

    /// The settings that decide the output bytes, as recorded in the manifest.
    pub fn options(
        &self,
        choice: &FormatChoice,
        format: &dyn ShardFormat,
    ) -> BTreeMap<String, Value> {
        let mut options = format.options();
        options.insert("shard_size".into(), Value::from(choice.shard_size()));
        options.insert(
            "max_samples".into(),
            self.max_samples.map_or(Value::Null, Value::from),
        );
        options.insert("prefix".into(), Value::from(choice.prefix()));
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
