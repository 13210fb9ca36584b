//! A Parquet file: magic at both ends, footer, and every row group decoded.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let root = shardsmith_fuzz::scratch();
    let rel = "part-000000.parquet";
    let entry = shardsmith_fuzz::entry(rel, data, "parquet");
    let inspection = shardsmith_fuzz::inspect(&root, rel, data, Some(&entry), None);
    shardsmith_fuzz::report(inspection.as_ref());
});
