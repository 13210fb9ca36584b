//! `diff`: two checkpoints compared tensor by tensor.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// First checkpoint: a safetensors file, a torch zip (.pt, .bin), a DCP directory, or a directory of such files
    pub a: PathBuf,

    /// Second checkpoint, in any of the same forms (another container is fine)
    pub b: PathBuf,

    /// For tensors whose data differs, count the differing elements and the largest differences
    ///
    /// Every element is read as a number (floats, bf16 and f16 included, and integers):
    /// the count of elements that differ, the first one's row-major index, the largest
    /// absolute difference |a - b| and the largest relative one |a - b| / max(|a|, |b|).
    /// A dtype conversion (bf16 in A, f16 in B) is compared by value too. Without it
    /// the comparison of a tensor stops at its first differing byte.
    ///
    /// Example: shardsmith diff run1/model.safetensors run2/model.safetensors --values
    #[arg(long)]
    pub values: bool,

    /// Rename A's tensors by the rules in FILE before matching them with B's
    ///
    /// One rule per line, `PATTERN -> REPLACEMENT`; `*` matches any text and each `*`
    /// of the replacement takes what the same-numbered `*` matched; the first matching
    /// rule wins; `#` starts a comment. E.g. `model.* -> *` drops a `model.` prefix.
    ///
    /// Example: shardsmith diff hf/ megatron.safetensors --map hf-to-megatron.txt
    #[arg(long, value_name = "FILE")]
    pub map: Option<PathBuf>,
}
