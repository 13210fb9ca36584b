//! Token files checked against what a tokenize manifest records: a Megatron `.bin`
//! (with its `.idx`, whose lengths are streamed beside it), a nanoGPT file or an llm.c
//! file (header, count). The first five bytes pick the format, the manifest's dtype,
//! vocabulary size, end-of-document id and recorded counts; then the file (for Megatron:
//! `.idx`, separator, `.bin`). Also the same files with no manifest (chosen by content).
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_manifest::{Manifest, ManifestKind};

const FORMATS: [&str; 3] = ["megatron", "nanogpt", "llmc"];
const DTYPES: [Option<&str>; 4] = [None, Some("uint16"), Some("uint32"), Some("int32")];

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<5>() else {
        return;
    };
    let flags = head[0];
    let format = FORMATS[usize::from(flags) % FORMATS.len()];
    let vocab = u16::from_le_bytes([head[1], head[2]]);
    let eod = u16::from_le_bytes([head[3], head[4]]);
    let root = shardsmith_fuzz::scratch();
    let (idx, bin) = if format == "megatron" {
        let parts = shardsmith_fuzz::split(rest, 2);
        (Some(parts[0]), parts[1])
    } else {
        (None, rest)
    };
    let bin_rel = "tokens_000000.bin";
    let idx_rel = "tokens_000000.idx";
    if let Some(idx) = idx {
        shardsmith_fuzz::write(&root, idx_rel, idx);
    }
    shardsmith_fuzz::write(&root, bin_rel, bin);

    let mut entry = shardsmith_fuzz::entry(bin_rel, bin, format);
    if flags & 0x10 != 0 {
        entry.tokens = Some(u64::from(vocab) / 2);
        entry.documents = Some(u64::from(eod) % 64);
    }
    let mut manifest = Manifest::new(ManifestKind::Tokenize, 1 << 20, vec![entry.clone()]);
    if vocab != 0 {
        manifest.options.insert("vocab_size".into(), vocab.into());
    }
    if flags & 0x20 != 0 {
        manifest.options.insert("eod_id".into(), eod.into());
    }
    if flags & 0x40 != 0 {
        manifest.options.insert("allow_special".into(), true.into());
    }
    if let Some(dtype) = DTYPES[usize::from(flags >> 2) % DTYPES.len()] {
        manifest.options.insert("dtype".into(), dtype.into());
    }
    let mut files = vec![(bin_rel, bin)];
    let mut inspections = Vec::new();
    if let Some(i) =
        shardsmith_fuzz::inspect_written(&root, bin_rel, bin, Some(&entry), Some(&manifest))
    {
        inspections.push((bin_rel, i));
    }
    if let Some(idx) = idx {
        files.push((idx_rel, idx));
        let idx_entry = shardsmith_fuzz::entry(idx_rel, idx, "megatron");
        if let Some(i) =
            shardsmith_fuzz::inspect_written(&root, idx_rel, idx, Some(&idx_entry), Some(&manifest))
        {
            inspections.push((idx_rel, i));
        }
    }
    shardsmith_fuzz::layout(&root, &files, &inspections);
    // Without a manifest: chosen by content, as `verify FILE` does.
    if let Some(i) = shardsmith_fuzz::inspect_written(&root, bin_rel, bin, None, None) {
        shardsmith_fuzz::report(Some(&i));
    }
});
