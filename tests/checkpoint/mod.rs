//! Checkpoints: `verify` on the committed fixtures (`basic`, which also holds the
//! fixture helpers), hostile files, DCP coverage, zero runs, files and DCP checkpoints
//! written by real torch, `diff` and `manifest --tensors` (`tensors`), `audit`, and the
//! Hugging Face cache.

mod audit;
pub mod basic;
mod dcp_coverage;
mod hfcache;
mod hostile;
mod interop;
mod tensors;
mod torch_dcp;
mod torch_files;
mod zero_runs;
