//! The settings `ls`, `cat` and `stats` share: which dataset, where.

use anyhow::Result;
use shardsmith_store::Location;

use crate::args::DatasetArgs;
use crate::storage;

/// DATASET, resolved from the arguments before anything is read.
#[derive(Debug)]
pub struct Settings {
    pub(super) data: DatasetArgs,
    pub(super) location: Location,
}

impl Settings {
    /// Names where DATASET is (a local path, or a URL of an object store).
    pub fn resolve(data: &DatasetArgs) -> Result<Self> {
        Ok(Self {
            data: data.clone(),
            location: storage::location(&data.dataset)?,
        })
    }

    /// DATASET as given.
    pub fn shown(&self) -> String {
        self.data.dataset.display().to_string()
    }
}
