//! Checkpoints read by content (`diff`, `manifest --tensors`): the first byte picks the
//! layout (a safetensors file, a torch zip, a legacy torch file, a DCP directory whose
//! `.metadata` and two data files are the parts of the rest); every tensor is then
//! digested in canonical form and the checkpoint diffed with itself, values compared.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_checkpoint::tensors::{self, diff};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let root = shardsmith_fuzz::scratch();
    let path = match pick % 4 {
        0 => {
            shardsmith_fuzz::write(&root, "model.safetensors", rest);
            root.join("model.safetensors")
        }
        1 | 2 => {
            shardsmith_fuzz::write(&root, "model.pt", rest);
            root.join("model.pt")
        }
        _ => {
            let parts = shardsmith_fuzz::split(rest, 3);
            shardsmith_fuzz::write(&root, ".metadata", parts[0]);
            shardsmith_fuzz::write(&root, "__0_0.distcp", parts[1]);
            shardsmith_fuzz::write(&root, "__1_0.distcp", parts[2]);
            root.clone()
        }
    };
    let Ok(found) = tensors::open(&path) else {
        return;
    };
    for t in &found {
        let _ = tensors::digest(t);
    }
    let options = diff::DiffOptions {
        values: true,
        map: tensors::MapRules::default(),
    };
    let _ = diff::diff(&found, &found, &options);
});
