//! A WebDataset shard compressed as a whole (`.tar.gz`, `.tar.zst`): the gzip header,
//! deflate data and trailer parsed by hand, zstd frames, and the tar walk behind them,
//! fed in blocks of varying sizes. The first byte chooses what the rest is:
//! 0 and 1: a gzip or zstd stream as it is (the magic is added when missing, so the
//! fuzzer starts past it); 2 and 3: a tar (every block with a ustar magic gets a correct
//! header checksum, as in the `tar` target) that is compressed here with gzip or zstd,
//! so that the tar walk is explored through each decoder.
#![no_main]
use std::io::Write;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::webdataset::ShardInspector;

const GZIP: &[u8] = &[0x1f, 0x8b];
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

fn with_magic(magic: &[u8], rest: &[u8]) -> Vec<u8> {
    if rest.starts_with(magic) {
        rest.to_vec()
    } else {
        [magic, rest].concat()
    }
}

fn tar(rest: &[u8]) -> Vec<u8> {
    let mut tar = rest.to_vec();
    for block in tar.chunks_exact_mut(512) {
        if block[257..262] == *b"ustar" {
            block[148..156].fill(b' ');
            let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
            block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        }
    }
    tar
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (name, bytes) = match mode % 4 {
        0 => ("shard-000000.tar.gz", with_magic(GZIP, rest)),
        1 => ("shard-000000.tar.zst", with_magic(ZSTD, rest)),
        2 => {
            let mut gz = flate2::GzBuilder::new()
                .mtime(0)
                .write(Vec::new(), flate2::Compression::fast());
            gz.write_all(&tar(rest)).expect("writes to memory");
            (
                "shard-000000.tar.gz",
                gz.finish().expect("writes to memory"),
            )
        }
        _ => (
            "shard-000000.tar.zst",
            zstd::bulk::compress(&tar(rest), 1).expect("compresses in memory"),
        ),
    };
    let inspection = shardsmith_fuzz::run(Box::new(ShardInspector::new(name)), &bytes);
    shardsmith_fuzz::report(Some(&inspection));
});
