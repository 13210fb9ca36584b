//! `pack`'s LitData input: an `index.json` and up to three chunks (split at the corpus
//! separator; a part names chunk 0, chunk 1 and a merged index's sub-directory chunk; an
//! empty part writes no file), opened, listed and every item read back with its leaves
//! converted to field bytes: PyTree items by their serializers, items kept only in a
//! chunk's Arrow IPC footer by the footer's columns.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::keys::KeyPrefix;
use shardsmith_shard::litdata::{LitdataDataset, is_litdata_input};
use shardsmith_store::{InputSource, LocalTree};

const CHUNKS: [&str; 3] = ["chunk-0-0.bin", "chunk-0-1.bin", "part/chunk-0-0.bin"];

fuzz_target!(|data: &[u8]| {
    // Under the targets' 256 MiB allocation limit: IPC-compressed footer batches stating
    // more than 64 MiB uncompressed are refused before they are decompressed.
    shardsmith_shard::parquet::set_decode_limit(64 << 20);
    let parts = shardsmith_fuzz::split(data, 4);
    let root = shardsmith_fuzz::scratch();
    let input = root.join("in");
    shardsmith_fuzz::write(&input, "index.json", parts[0]);
    for (name, bytes) in CHUNKS.iter().zip(&parts[1..]) {
        if !bytes.is_empty() {
            shardsmith_fuzz::write(&input, name, bytes);
        }
    }
    let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(&input));
    let _ = is_litdata_input(tree.as_ref(), None);
    let Ok(source) = LitdataDataset::open(tree, "in") else {
        return;
    };
    let prefix = if data.len() % 2 == 0 {
        KeyPrefix::Path
    } else {
        KeyPrefix::None
    };
    let source = source.with_key_prefix(prefix);
    shardsmith_fuzz::read_all(&source);
});
