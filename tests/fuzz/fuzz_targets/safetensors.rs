//! A safetensors file: the 8-byte length, the JSON header, offsets, dtypes and shapes,
//! and the value scan (NaN/Inf, zero runs) of every tensor; then the checkpoint layout
//! checks over it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let root = shardsmith_fuzz::scratch();
    let rel = "model.safetensors";
    if let Some(inspection) = shardsmith_fuzz::inspect(&root, rel, data, None, None) {
        shardsmith_fuzz::layout(&root, &[(rel, data)], &[(rel, inspection)]);
    }
});
