//! `pack`'s MDS input: an `index.json` and up to three shards (split at the corpus
//! separator; a part names shard 0 plain, shard 0 zstd-compressed and a merged index's
//! sub-directory shard; an empty part writes no file), opened, listed and every sample
//! read back with its columns converted to field bytes.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::content::Validation;
use shardsmith_shard::mds::input::MdsDataset;
use shardsmith_shard::sample::SampleSource;
use shardsmith_store::{InputSource, LocalTree};

const SHARDS: [&str; 3] = [
    "shard.00000.mds",
    "shard.00000.mds.zstd",
    "part/shard.00000.mds",
];

fuzz_target!(|data: &[u8]| {
    let parts = shardsmith_fuzz::split(data, 4);
    let root = shardsmith_fuzz::scratch();
    let input = root.join("in");
    shardsmith_fuzz::write(&input, "index.json", parts[0]);
    for (name, bytes) in SHARDS.iter().zip(&parts[1..]) {
        if !bytes.is_empty() {
            shardsmith_fuzz::write(&input, name, bytes);
        }
    }
    let scratch = (data.len() % 2 == 0).then(|| root.clone());
    let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(&input));
    let Ok(source) = MdsDataset::open(tree, "in", "key", scratch) else {
        return;
    };
    let _ = source.suggested_encodings();
    let Ok(listing) = source.samples() else {
        return;
    };
    if let Ok(mut reader) = source.reader(&listing.samples, Validation::Full) {
        let mut buf = Vec::new();
        for i in 0..listing.samples.len() {
            buf.clear();
            if reader.load(i, &mut buf).is_err() {
                break;
            }
        }
    }
});
