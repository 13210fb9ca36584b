//! The tar walk of a WebDataset shard (headers, PAX records, GNU long names and sparse
//! members with their extended headers and maps, padding, the end marker), fed in
//! blocks of varying sizes. When the first byte is odd, every 512-byte
//! block with a ustar magic gets a correct header checksum first: without that the
//! fuzzer rarely gets past the checksum to the fields behind it. When its second bit
//! is set, the walk also lists samples and members for the readers' indexes (as `verify`
//! does beside a DALI or Energon index) and makes their bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_shard::webdataset::TarInspector;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, tar)) = data.split_first() else {
        return;
    };
    let mut tar = tar.to_vec();
    if mode & 1 == 1 {
        for block in tar.chunks_exact_mut(512) {
            if block[257..262] == *b"ustar" {
                block[148..156].fill(b' ');
                let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
                block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
            }
        }
    }
    let inspector = if mode & 2 == 2 {
        TarInspector::listing("shard-000000.tar")
    } else {
        TarInspector::new("shard-000000.tar")
    };
    let inspection = shardsmith_fuzz::run(Box::new(inspector), &tar);
    shardsmith_fuzz::report(Some(&inspection));
});
