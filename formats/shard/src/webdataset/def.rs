//! WebDataset in the format registry: options, defaults and how its shards are told.

use std::collections::BTreeMap;
use std::sync::Arc;

use shardsmith_manifest::{FileContext, Inspector};
use shardsmith_store::InputSource;

use super::WebDataset;
use super::compress::TarCompression;
use super::input::{TarShards, is_webdataset_input};
use super::readers::IndexKinds;
use super::unpack::ShardInspector;
use crate::columns::Encoding;
use crate::definition::{Configured, FormatDef, FormatOptions, InputSpec, OptionName};
use crate::sample::{SampleSource, SampleSpec};
use crate::{Error, Result, ShardFormat};

/// The registry entry of WebDataset.
pub struct Def;

/// The registry entry of WebDataset.
pub static WEBDATASET: Def = Def;

impl FormatDef for Def {
    fn name(&self) -> &'static str {
        "webdataset"
    }

    fn aliases(&self) -> &'static [&'static str] {
        &["wds"]
    }

    fn summary(&self) -> &'static str {
        "WebDataset tar shards (PREFIX-NNNNNN.tar[.gz|.zst]), read by webdataset and wids; alias: wds"
    }

    fn title(&self) -> &'static str {
        "WebDataset"
    }

    fn input_summary(&self) -> &'static str {
        "WebDataset tar shards (.tar, .tar.gz, .tgz, .tar.zst), samples grouped as webdataset groups them"
    }

    fn is_input(&self, source: &dyn InputSource, only: Option<&str>) -> bool {
        is_webdataset_input(source, only)
    }

    fn open_input(
        &self,
        source: Arc<dyn InputSource>,
        spec: &InputSpec<'_>,
    ) -> Result<Box<dyn SampleSource>> {
        let shards = TarShards::open(source, spec.shown, spec.one_file(), spec.scratch.clone())?;
        Ok(Box::new(shards.with_key_prefix(spec.key_prefix)))
    }

    /// Shards are files of their own: a list (`--files-from`, a brace pattern) can
    /// name some of them.
    fn selects_files(&self) -> bool {
        true
    }

    fn takes(&self) -> &'static [OptionName] {
        &[OptionName::Prefix, OptionName::Index]
    }

    fn configure(&self, options: &FormatOptions, _shard_size: u64) -> Result<Arc<dyn Configured>> {
        let compression = match &options.compression {
            Some(text) => TarCompression::parse(text)
                .map_err(|e| Error::Setting(format!("--compression: {e}")))?,
            None => None,
        };
        let index = match &options.index {
            Some(text) => {
                IndexKinds::parse(text).map_err(|e| Error::Setting(format!("--index: {e}")))?
            }
            None => IndexKinds::default(),
        };
        if index.any() && compression.is_some() {
            return Err(Error::Setting(format!(
                "--index {}: none of these readers reads compressed shards through its index (wids maps plain .tar files; DALI's and Energon's indexes are byte offsets into the plain tar); leave out --compression or --index",
                index.names().join(",")
            )));
        }
        Ok(Arc::new(WebDataset { compression, index }))
    }

    fn dataset_files(
        &self,
        state: &serde_json::Value,
        shards: &[(&str, &serde_json::Value)],
    ) -> std::result::Result<Vec<crate::format::DatasetFile>, crate::format::DatasetFilesError>
    {
        super::readers::index_files(state, shards)
    }

    fn sniff_name(&self, path: &str) -> bool {
        [".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd"]
            .iter()
            .any(|ext| path.ends_with(ext))
    }

    /// Tar shards, plain or compressed as a whole: by the ustar magic at byte 257, or by
    /// decompressing the first block of a gzip or zstd stream.
    fn sniff_content(&self, head: &[u8]) -> bool {
        head.get(257..262) == Some(b"ustar") || compressed_tar(head)
    }

    /// A shard with a DALI or Energon index beside it is also listed, to check them.
    fn inspector(&self, ctx: &FileContext<'_>) -> Box<dyn Inspector> {
        if super::readers::wants_listing(ctx.root, ctx.path) {
            return Box::new(ShardInspector::listing(ctx.path));
        }
        Box::new(ShardInspector::new(ctx.path))
    }

    /// Every `wids-index.json`, DALI index and Energon index against the shards they
    /// index.
    fn check_layout(
        &self,
        root: &std::path::Path,
        files: &BTreeMap<String, u64>,
        inspections: &BTreeMap<String, shardsmith_manifest::Inspection>,
        _manifest: Option<&shardsmith_manifest::Manifest>,
    ) -> Vec<shardsmith_manifest::Finding> {
        let mut findings = super::wids_check::check_wids_indexes(root, files, inspections);
        findings.extend(super::readers::check_reader_indexes(
            root,
            files,
            inspections,
        ));
        findings
    }
}

impl Configured for WebDataset {
    fn build(
        &self,
        _samples: &[SampleSpec],
        _columns: &BTreeMap<String, Encoding>,
    ) -> Result<Box<dyn ShardFormat>> {
        Ok(Box::new(*self))
    }
}

/// True when `head` starts a gzip or zstd stream whose first decompressed block is a
/// ustar header: a compressed tar under any name (`data.gz`), told apart from other
/// compressed files (`corpus.jsonl.zst`) by decompressing 512 bytes.
pub fn compressed_tar(head: &[u8]) -> bool {
    use std::io::Read;
    let mut block = Vec::with_capacity(512);
    // A stream cut short or damaged after its first block still counts: what was read
    // before the error stays in `block`.
    let _ = if head.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(head)
            .take(512)
            .read_to_end(&mut block)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        zstd::stream::read::Decoder::with_buffer(head)
            .and_then(|decoder| decoder.take(512).read_to_end(&mut block))
    } else {
        return false;
    };
    block.get(257..262) == Some(b"ustar")
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::compressed_tar;

    #[test]
    fn compressed_tars_are_told_by_content() {
        let mut tar = crate::webdataset::member_header("k.txt", 0)
            .unwrap()
            .as_bytes()
            .to_vec();
        tar.extend_from_slice(&[0; 1024]);
        let gzip = |data: &[u8]| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(data).unwrap();
            gz.finish().unwrap()
        };
        assert!(compressed_tar(&gzip(&tar)));
        assert!(compressed_tar(&zstd::bulk::compress(&tar, 3).unwrap()));
        assert!(!compressed_tar(&gzip(b"{\"text\": \"not a tar\"}\n")));
        assert!(!compressed_tar(
            &zstd::bulk::compress(&[7; 600], 3).unwrap()
        ));
        assert!(
            !compressed_tar(&tar),
            "a plain tar is told by its own magic"
        );
        assert!(!compressed_tar(&[0x1f, 0x8b]));
    }
}
