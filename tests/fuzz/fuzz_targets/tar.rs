//! The tar walk of a WebDataset shard (headers, PAX and GNU records, padding, the end
//! marker), fed in blocks of varying sizes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_formats::webdataset::TarInspector;

fuzz_target!(|data: &[u8]| {
    let inspection = shardsmith_fuzz::run(Box::new(TarInspector::new("shard-000000.tar")), data);
    shardsmith_fuzz::report(Some(&inspection));
});
