//! `audit RUN_DIR`: every checkpoint of a training run verified (in parallel, each file
//! read once), its status, the newest intact one named, and the pointer files
//! (`latest`, Megatron's tracker, a `latest` symlink) checked against what they name.
//! A run in an object store is surveyed from its listing ([`audit_listed`]).

mod listed;
mod local;
mod pointers;
mod report;

pub use listed::{CheckpointCheck, audit_listed};
pub use local::{audit_run, verify_options};
pub use report::{AuditReport, CheckpointStatus, step_of};
