//! One LitData chunk as `verify` checks it: item count, offsets, every item's leaf sizes
//! against the leaves the `index.json` beside it names (the second part, split at the
//! corpus separator; empty: no index), or the Arrow IPC footer of a chunk whose items
//! live only there; then that `index.json` compared with the chunk (size, item count,
//! chunks it lists that are missing).
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_manifest::FileContext;
use shardsmith_shard::litdata::LitdataInspector;

const CHUNK: &str = "chunk-0-0.bin";

fuzz_target!(|data: &[u8]| {
    // Under the targets' 256 MiB allocation limit: IPC-compressed footer batches stating
    // more than 64 MiB uncompressed are refused before they are decompressed.
    shardsmith_shard::parquet::set_decode_limit(64 << 20);
    let parts = shardsmith_fuzz::split(data, 2);
    let (chunk, index) = (parts[0], parts[1]);
    let root = shardsmith_fuzz::scratch();
    if !index.is_empty() {
        shardsmith_fuzz::write(&root, "index.json", index);
    }
    let ctx = FileContext {
        root: &root,
        path: CHUNK,
        entry: None,
        manifest: None,
    };
    let inspection = shardsmith_fuzz::run(Box::new(LitdataInspector::new(&ctx)), chunk);
    shardsmith_fuzz::report(Some(&inspection));
    let mut files = vec![(CHUNK, chunk)];
    if !index.is_empty() {
        files.push(("index.json", index));
    }
    shardsmith_fuzz::layout(&root, &files, &[(CHUNK, inspection)]);
});
