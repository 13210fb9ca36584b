//! `pack`'s Hugging Face input: a `save_to_disk` directory's `dataset_info.json`,
//! `state.json` and up to two data files (split at the corpus separator after a first
//! byte whose low bit names the files as our writer does, `data-00000.arrow`, or as
//! `datasets` does, `data-00000-of-00002.arrow`, and whose high bit lists the second
//! file alone, as `cat --shard` does), opened, listed and every row read back as field
//! bytes. An empty data part writes no file.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::hf::input::{HfRows, is_hf_input};
use shardsmith_shard::keys::KeyPrefix;
use shardsmith_store::{InputSource, LocalTree};

const NAMES: [[&str; 2]; 2] = [
    ["data-00000.arrow", "data-00001.arrow"],
    ["data-00000-of-00002.arrow", "data-00001-of-00002.arrow"],
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let names = NAMES[usize::from(pick & 1)];
    let parts = shardsmith_fuzz::split(rest, 4);
    let root = shardsmith_fuzz::scratch();
    let input = root.join("in");
    shardsmith_fuzz::write(&input, "dataset_info.json", parts[0]);
    shardsmith_fuzz::write(&input, "state.json", parts[1]);
    for (name, bytes) in names.iter().zip(&parts[2..]) {
        if !bytes.is_empty() {
            shardsmith_fuzz::write(&input, name, bytes);
        }
    }
    let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(&input));
    let _ = is_hf_input(tree.as_ref(), None);
    let shard = (pick & 0x80 != 0).then_some(names[1]);
    let Ok(source) = HfRows::open(tree, "in", shard, "key") else {
        return;
    };
    let prefix = if pick & 2 != 0 {
        KeyPrefix::Stem
    } else {
        KeyPrefix::None
    };
    let source = source.with_key_prefix(prefix);
    shardsmith_fuzz::read_all(&source);
});
