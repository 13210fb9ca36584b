//! The whole `verify` entry point (`verify_path`, real inspectors, value scans). The
//! first byte picks the layout; the rest is one file, or several split at the
//! separator, written under names that route them to every inspector. Single-file
//! layouts verify the file, the others the directory (layout checks included).
#![no_main]
use libfuzzer_sys::fuzz_target;

/// (names, verify the directory rather than the first file)
const LAYOUTS: &[(&[&str], bool)] = &[
    (&["shard-000000.tar"], false),
    (&["shard.00000.mds"], false),
    (&["shard.00000.mds.zstd"], false),
    (&["part-000000.parquet"], false),
    (&["model.safetensors"], false),
    (&["model.pt"], false),
    (&["legacy.pt"], false),
    (&["data.pkl"], false),
    (&["tokens.idx"], false),
    (&["tokens.bin"], false),
    (&["__0_0.distcp"], false),
    (&["x"], false),
    (
        &["index.json", "shard.00000.mds", "shard.00001.mds.zstd"],
        true,
    ),
    (&["tokens.idx", "tokens.bin"], true),
    (&[".metadata", "__0_0.distcp", "__1_0.distcp"], true),
    (
        &[
            "model.safetensors.index.json",
            "model-00002-of-00003.safetensors",
            "model-00003-of-00003.safetensors",
        ],
        true,
    ),
    (
        &[
            "latest",
            "global_step1/mp_rank_00_model_states.pt",
            "global_step1/zero_pp_rank_0_mp_rank_00_optim_states.pt",
        ],
        true,
    ),
    (
        &[
            "latest_checkpointed_iteration.txt",
            "iter_0000001/mp_rank_00/model_optim_rng.pt",
            "iter_0000001/mp_rank_01/model_optim_rng.pt",
        ],
        true,
    ),
    (&["manifest.json", "shard-000000.tar", "tokens.bin"], true),
    (&["SHA256SUMS", "shard-000000.tar", "model.pt"], true),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (names, whole_dir) = LAYOUTS[usize::from(pick) % LAYOUTS.len()];
    let root = shardsmith_fuzz::scratch();
    let parts = shardsmith_fuzz::split(rest, names.len());
    for (name, part) in names.iter().zip(&parts) {
        shardsmith_fuzz::write(&root, name, part);
    }
    if whole_dir {
        shardsmith_fuzz::verify(&root);
    } else {
        shardsmith_fuzz::verify(&root.join(names[0]));
    }
});
