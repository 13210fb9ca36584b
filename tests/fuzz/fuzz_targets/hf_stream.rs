//! One Hugging Face `save_to_disk` file: the Arrow IPC stream's messages (schema, record
//! batches, end marker) and their lengths, as `verify` walks them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_shard::hf::HfInspector;

fuzz_target!(|data: &[u8]| {
    let inspection = shardsmith_fuzz::run(Box::new(HfInspector::new("data-00000.arrow")), data);
    shardsmith_fuzz::report(Some(&inspection));
});
