//! The steps every run that writes a dataset ends with, in this order: count and seal
//! the manifest, write `SHA256SUMS`, write `manifest.json` last (its presence means the
//! dataset is complete), then remove the resume state.

use shardsmith_manifest::{
    DEFAULT_CHUNK_SIZE, Digester, FileEntry, MANIFEST_FILE, Manifest, SUMS_FILE, sums,
};

use crate::{OutputSink, Result, resume};

/// Writes `name` with `bytes` atomically and returns its manifest entry (a dataset-level
/// file such as MDS `index.json`, hashed from the bytes written).
pub fn write_entry(sink: &dyn OutputSink, name: &str, bytes: &[u8]) -> Result<FileEntry> {
    sink.write_atomic(name, bytes)?;
    let mut digester = Digester::new(DEFAULT_CHUNK_SIZE);
    digester.update(bytes);
    Ok(FileEntry::new(name.to_string(), &digester.finish()))
}

/// Seals `manifest` (whose files and skipped inputs are final), writes `SHA256SUMS` and
/// then `manifest.json`, and clears the resume state.
pub fn seal(sink: &dyn OutputSink, manifest: &mut Manifest) -> Result<()> {
    manifest.recount();
    manifest.seal();
    sink.write_atomic(SUMS_FILE, sums::render(&manifest.files).as_bytes())?;
    sink.write_atomic(MANIFEST_FILE, &manifest.to_json_bytes())?;
    resume::clear(sink)
}
