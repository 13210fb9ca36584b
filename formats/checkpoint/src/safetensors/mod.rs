//! safetensors: every check the reference reader makes (header length bounds, JSON,
//! dtypes, shape × dtype size = byte range, ranges contiguous, in bounds and
//! non-overlapping, file length exact), then the content checks of each tensor's bytes,
//! all during the single read that hashes the file.

mod header;
mod inspector;

pub use header::MAX_HEADER;
pub(crate) use header::is_safetensors;
pub use inspector::SafetensorsInspector;

#[cfg(test)]
mod tests;
