//! A torch zip checkpoint: the central directory located by positioned reads, then the
//! local headers, entries (stored and deflated, CRCs), `data.pkl` and the tensor
//! storages it references, streamed in blocks of varying sizes. The first byte picks the
//! name (a plain `.pt`, a DeepSpeed or a Megatron rank file), which the layout checks
//! read.
#![no_main]
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 4] = [
    "model.pt",
    "global_step1/mp_rank_00_model_states.pt",
    "iter_0000001/mp_rank_00/model_optim_rng.pt",
    "pytorch_model.bin",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let root = shardsmith_fuzz::scratch();
    let rel = NAMES[usize::from(pick) % NAMES.len()];
    if let Some(inspection) = shardsmith_fuzz::inspect(&root, rel, file, None, None) {
        shardsmith_fuzz::layout(&root, &[(rel, file)], &[(rel, inspection)]);
    }
});
