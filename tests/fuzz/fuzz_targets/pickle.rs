//! A pickle, read opcode by opcode and never executed: the first byte picks a plain
//! pickle (`.pkl`), DCP `.metadata`, or a legacy (pre-zip) torch file.
#![no_main]
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 3] = ["data.pkl", ".metadata", "legacy.pt"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let root = shardsmith_fuzz::scratch();
    let rel = NAMES[usize::from(pick) % NAMES.len()];
    let inspection = shardsmith_fuzz::inspect(&root, rel, file, None, None);
    shardsmith_fuzz::report(inspection.as_ref());
});
