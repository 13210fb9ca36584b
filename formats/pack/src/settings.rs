//! The settings of a `pack` run: checked before any I/O, and the subset that decides
//! the output bytes recorded in the manifest.

use std::collections::BTreeMap;

use serde_json::Value;

use shardsmith_shard::content::Validation;
use shardsmith_shard::keys::KeyPrefix;
use shardsmith_shard::{FormatChoice, ShardFormat};

pub use shardsmith_store::tasks::TaskId;

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
    /// Write only this task's share of the shards of the global plan, into an output
    /// the other tasks share; `merge` finishes the dataset ([`crate::task`]).
    pub task: Option<TaskId>,
    /// Pack only these fields (all when `None`); other files are not inputs of this run.
    pub fields: Option<std::collections::BTreeSet<String>>,
    /// Decode, resize and re-encode image fields ([`crate::images`]).
    pub images: Option<crate::images::ImageSettings>,
    /// What the source put before the keys of each input file's samples
    /// (`--key-prefix`): recorded, and named in the hint of a key used twice.
    pub key_prefix: KeyPrefix,
    /// Leave out every sample whose fields equal an earlier sample's ([`crate::dedup`]).
    pub dedup: bool,
}

impl Default for PackSettings {
    fn default() -> Self {
        Self {
            max_samples: None,
            shuffle_seed: None,
            validation: Validation::Cheap,
            strict: false,
            force: false,
            task: None,
            fields: None,
            images: None,
            key_prefix: KeyPrefix::None,
            dedup: false,
        }
    }
}

impl PackSettings {
    /// Checks the settings before any I/O.
    pub fn check(&self) -> Result<()> {
        if let Some(task) = &self.task {
            if task.count == 0 || task.index >= task.count {
                return Err(Error::Setting(format!(
                    "task index {} ({}) must be below the task count {}",
                    task.index, task.source, task.count
                )));
            }
            if self.force {
                return Err(Error::Setting(
                    "--force cannot be combined with a task index: each task would remove what the others wrote; empty the output first".into(),
                ));
            }
        }
        if let Some(images) = &self.images {
            images
                .options
                .check()
                .map_err(|e| Error::Setting(e.to_string()))?;
            if self.task.is_some() {
                return Err(Error::Setting(
                    "image options cannot be split into tasks: the shared plan needs every transformed image's size, which only a run that transforms them all knows. Pack each part into its own output and combine them with `shardsmith merge`".into(),
                ));
            }
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
        if let Some(images) = &self.images {
            options.insert("images".into(), images.to_json());
        }
        if self.key_prefix != KeyPrefix::None {
            options.insert("key_prefix".into(), Value::from(self.key_prefix.name()));
        }
        if self.dedup {
            options.insert("dedup".into(), Value::Bool(true));
        }
        options.insert(
            "validation".into(),
            serde_json::to_value(self.validation).expect("validation serializes"),
        );
        options
    }
}
