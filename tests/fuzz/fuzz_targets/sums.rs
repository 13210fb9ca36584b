//! `SHA256SUMS`: parsed (escapes, binary-mode marker), then a directory with no manifest
//! verified against it.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = shardsmith_manifest::sums::parse(text);
    }
    let root = shardsmith_fuzz::scratch();
    shardsmith_fuzz::write(&root, "SHA256SUMS", data);
    shardsmith_fuzz::write(&root, "a.txt", b"abc\n");
    shardsmith_fuzz::write(&root, "sub/b.bin", b"");
    shardsmith_fuzz::verify(&root);
});
