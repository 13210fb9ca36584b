//! What `shardsmith --version` says beyond the version: the commit, the target, and
//! what this build can read and write, so a bug report names what was run.

use shardsmith_shard::registry::FORMATS;

/// The `--version` text after `shardsmith `.
pub fn long() -> String {
    let formats: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
    let schemes = shardsmith_store::object::SCHEMES
        .iter()
        .map(|s| format!("{s}://"))
        .collect::<Vec<_>>()
        .join(", ");
    let tokenizers = [
        "gpt2",
        "r50k_base",
        "p50k_base",
        "cl100k_base",
        "o200k_base",
    ]
    .iter()
    .filter(|name| shardsmith_tokens::OpenAi::from_name(name).is_some())
    .copied()
    .collect::<Vec<_>>()
    .join(", ");
    format!(
        "{version}
commit       {commit}
target       {target} ({profile}, mimalloc)
storage      local files; {schemes}
pack         {formats}
tokenize     megatron, nanogpt, llmc; tokenizers {tokenizers} (built in), tokenizer.json (Hugging Face)
checkpoints  safetensors, torch zip, legacy torch, DCP, DeepSpeed, Megatron, Hugging Face cache",
        version = env!("CARGO_PKG_VERSION"),
        commit = env!("SHARDSMITH_COMMIT"),
        target = env!("SHARDSMITH_TARGET"),
        profile = env!("SHARDSMITH_PROFILE"),
        formats = formats.join(", "),
    )
}
