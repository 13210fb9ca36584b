//! A Megatron `.idx`: header, sizes, pointers and document boundaries, streamed.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let root = shardsmith_fuzz::scratch();
    let rel = "tokens.idx";
    let entry = shardsmith_fuzz::entry(rel, data, "megatron");
    if let Some(inspection) = shardsmith_fuzz::inspect(&root, rel, data, Some(&entry), None) {
        shardsmith_fuzz::layout(&root, &[(rel, data)], &[(rel, inspection)]);
    }
});
