//! Checkpoints read by content (`diff`, `manifest --tensors`): the first byte picks the
//! layout (a safetensors file, a torch zip, a legacy torch file, a DCP directory whose
//! `.metadata` and two data files are the parts of the rest); every tensor is then
//! digested in canonical form and the checkpoint diffed with itself, values compared,
//! and the values beside the tensors too. A legacy torch file `diff` reads is one
//! `verify` does not call cut short (the two read its layout in one way).
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
    let legacy = rest.starts_with(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19");
    let opened = tensors::open_all(&path);
    if legacy && opened.is_ok() {
        let inspection = shardsmith_fuzz::inspect(&root, "model.pt", rest, None, None)
            .expect("a legacy file is inspected");
        assert!(
            !inspection
                .findings
                .iter()
                .any(|f| f.kind == shardsmith_manifest::FindingKind::Truncated),
            "diff read a legacy file verify calls cut short: {:?}",
            inspection.findings
        );
    }
    let _ = shardsmith_checkpoint::listing::list_tensors(&path);
    let Ok(checkpoint) = opened else {
        return;
    };
    let found = checkpoint.tensors;
    let _ = diff::diff_entries(
        &checkpoint.entries,
        &checkpoint.entries,
        &Default::default(),
    );
    for t in &found {
        let _ = tensors::digest(t);
    }
    let options = diff::DiffOptions {
        values: true,
        map: tensors::MapRules::default(),
    };
    let _ = diff::diff(&found, &found, &options);
});
