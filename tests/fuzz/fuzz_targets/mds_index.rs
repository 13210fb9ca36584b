//! An MDS dataset directory verified whole: `index.json` (the first part of the input)
//! checked against the shards it lists (the other parts, split at the separator):
//! `shard.00000.mds`, `shard.00000.mds.zstd`, `shard.00001.mds`.
#![no_main]
use libfuzzer_sys::fuzz_target;

const SHARDS: [&str; 3] = ["shard.00000.mds", "shard.00000.mds.zstd", "shard.00001.mds"];

fuzz_target!(|data: &[u8]| {
    let root = shardsmith_fuzz::scratch();
    let parts = shardsmith_fuzz::split(data, 1 + SHARDS.len());
    shardsmith_fuzz::write(&root, "index.json", parts[0]);
    for (name, part) in SHARDS.iter().zip(&parts[1..]) {
        if !part.is_empty() {
            shardsmith_fuzz::write(&root, name, part);
        }
    }
    shardsmith_fuzz::verify(&root);
});
