//! What the tasks of a split run leave in the shared output for the final step, and
//! the claim that finds two runs of one task index.

use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use shardsmith_manifest::Manifest;
use shardsmith_store::resume::STATE_DIR;

use crate::state::PlanRecord;

/// The record a task leaves when its share is decided.
#[derive(Serialize, Deserialize)]
pub(super) struct TaskRecord {
    pub(super) fingerprint: String,
    pub(super) index: u32,
    pub(super) count: u32,
    pub(super) source: String,
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) plans: Range<usize>,
    pub(super) total_plans: usize,
    /// The manifest every task of the run would write, without files (the inputs left
    /// out while listing are in it).
    pub(super) manifest: Manifest,
    /// What the format needs to write its dataset files ([`ShardFormat::dataset_state`]).
    ///
    /// [`ShardFormat::dataset_state`]: shardsmith_shard::ShardFormat::dataset_state
    pub(super) format_state: Value,
    /// What became of each of its plans, in order.
    pub(super) records: Vec<PlanRecord>,
}

/// What every task writes, identically: the task count of the run.
#[derive(Serialize, Deserialize)]
pub(super) struct Tasks {
    pub(super) count: u32,
}

/// Which run of a task holds its index.
#[derive(Serialize, Deserialize, PartialEq)]
pub(super) struct Claim {
    pub(super) host: String,
    pub(super) pid: u32,
    pub(super) nonce: String,
}

pub(super) fn tasks_file() -> String {
    format!("{STATE_DIR}/tasks.json")
}

pub(super) fn record_file(index: u32) -> String {
    format!("{STATE_DIR}/task-{index:06}.json")
}

pub(super) fn claim_file(index: u32) -> String {
    format!("{STATE_DIR}/task-{index:06}.claim")
}

pub(super) fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

pub(super) fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("task state serializes")
}
