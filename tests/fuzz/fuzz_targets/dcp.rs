//! A PyTorch DCP checkpoint verified whole: `.metadata` (a pickle: the first part of
//! the input) and the data files it points into, `__0_0.distcp` and `__1_0.distcp` (the
//! other parts); then read by content as `ls` and `diff` read it, every tensor digested
//! (zstd-compressed items decoded again there).
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_checkpoint::tensors;

fuzz_target!(|data: &[u8]| {
    let root = shardsmith_fuzz::scratch();
    let parts = shardsmith_fuzz::split(data, 3);
    shardsmith_fuzz::write(&root, ".metadata", parts[0]);
    shardsmith_fuzz::write(&root, "__0_0.distcp", parts[1]);
    if !parts[2].is_empty() {
        shardsmith_fuzz::write(&root, "__1_0.distcp", parts[2]);
    }
    shardsmith_fuzz::verify(&root);
    if let Ok(found) = tensors::open(&root) {
        for t in &found {
            let _ = tensors::digest(t);
        }
    }
});
