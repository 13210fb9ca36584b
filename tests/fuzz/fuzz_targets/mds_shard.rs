//! One MDS shard: decompression (the first byte picks none, zstd, gz, bz2, br or
//! snappy), header, offset table, embedded config, record sizes and hashes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_shard::mds::MdsInspector;

const NAMES: [&str; 6] = [
    "shard.00000.mds",
    "shard.00000.mds.zstd",
    "shard.00000.mds.gz",
    "shard.00000.mds.bz2",
    "shard.00000.mds.br",
    "shard.00000.mds.snappy",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, shard)) = data.split_first() else {
        return;
    };
    let name = NAMES[usize::from(pick) % NAMES.len()];
    let inspection = shardsmith_fuzz::run(Box::new(MdsInspector::new(name)), shard);
    shardsmith_fuzz::report(Some(&inspection));
});
