//! Names that say what a file of a checkpoint directory is, whatever its content:
//! leftovers of interrupted saves, checkpoint files.

/// True for names of temporary files left by interrupted saves: safetensors'
/// `.tmpXXXXXX`, `*.tmp` (`.metadata.tmp`, `model.pt.tmp`), `*.incomplete` (hub
/// downloads), Orbax's `*.orbax-checkpoint-tmp-*`.
pub fn is_temp_leftover(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    (name.starts_with(".tmp") && name.len() > 4)
        || (name.ends_with(".tmp") && name.len() > 4)
        || name.ends_with(".incomplete")
        || rel.contains(".orbax-checkpoint-tmp-")
}

/// True for file names that are checkpoints whatever their content.
pub fn is_checkpoint_name(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(ext, "pt" | "pth" | "ckpt" | "safetensors" | "distcp")
        || name == ".metadata"
        || (ext == "bin"
            && ["pytorch_model", "training_args", "optimizer", "scheduler"]
                .iter()
                .any(|p| name.starts_with(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_and_checkpoint_names() {
        for t in [
            ".tmpa1B2c3",
            "ckpt/.metadata.tmp",
            "model.pt.tmp",
            "x.safetensors.incomplete",
            "3.orbax-checkpoint-tmp-17/x",
        ] {
            assert!(is_temp_leftover(t), "{t}");
        }
        assert!(!is_temp_leftover("model.pt"));
        assert!(!is_temp_leftover(".tmp"));
        for c in [
            "a/model.pt",
            "w.safetensors",
            "__0_0.distcp",
            "pytorch_model-00001-of-00002.bin",
            "d/.metadata",
        ] {
            assert!(is_checkpoint_name(c), "{c}");
        }
        for c in ["tokens_000000.bin", "shard-000000.tar", "index.json"] {
            assert!(!is_checkpoint_name(c), "{c}");
        }
    }
}
