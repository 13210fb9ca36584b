//! A `manifest.json`: parsed, then a directory verified against it (two small files, one
//! of them a tar shard): sizes, digests, chunk CRCs, root digest, recorded formats,
//! sample counts and keys, skipped entries, `--expect-root`.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use shardsmith_manifest::Manifest;

fuzz_target!(|data: &[u8]| {
    let _ = Manifest::parse(data, Path::new("manifest.json"));
    let root = shardsmith_fuzz::scratch();
    shardsmith_fuzz::write(&root, "manifest.json", data);
    shardsmith_fuzz::write(&root, "a.txt", b"abc\n");
    shardsmith_fuzz::write(&root, "shard-000000.tar", &[0u8; 1024]);
    shardsmith_fuzz::verify(&root);
});
