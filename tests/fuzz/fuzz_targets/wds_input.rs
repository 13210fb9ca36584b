//! `pack`'s WebDataset input: one tar shard (the first byte picks plain, gzip or zstd
//! naming and whether compressed shards spill to scratch), walked, grouped into samples
//! and every sample read back, streamed fields (large ones, GNU sparse files expanded)
//! drained up to a bound. Damage must be an error, never a panic or an allocation sized
//! by a header (a PAX size, a sparse file's real size, its map's length).
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::content::Validation;
use shardsmith_shard::sample::{Loaded, SampleSource};
use shardsmith_shard::webdataset::input::TarShards;
use shardsmith_store::{InputSource, LocalTree};

/// Bytes drained from one streamed field: a sparse file a few bytes long may expand to
/// gigabytes of zeros, which is its content (`pack` writes it), not a bug to find here.
const DRAIN: u64 = 64 << 20;

const NAMES: [&str; 4] = [
    "shard-000000.tar",
    "shard-000000.tar.gz",
    "shard-000000.tgz",
    "shard-000000.tar.zst",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, shard)) = data.split_first() else {
        return;
    };
    let root = shardsmith_fuzz::scratch();
    let input = root.join("in");
    shardsmith_fuzz::write(&input, NAMES[usize::from(pick) % NAMES.len()], shard);
    let scratch = (pick & 0x80 != 0).then(|| root.clone());
    let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(&input));
    let Ok(source) = TarShards::open(tree, "in", None, scratch) else {
        return;
    };
    let Ok(listing) = source.samples() else {
        return;
    };
    for sample in &listing.samples {
        for field in &sample.fields {
            let _ = source.field_path(sample, field);
        }
    }
    if let Ok(mut reader) = source.reader(&listing.samples, Validation::Full) {
        let mut buf = Vec::new();
        for i in 0..listing.samples.len() {
            buf.clear();
            match reader.load(i, &mut buf) {
                Err(_) => break,
                Ok(Ok(Loaded::Streams(streams))) => {
                    for stream in streams {
                        let _ = std::io::copy(
                            &mut std::io::Read::take(stream, DRAIN),
                            &mut std::io::sink(),
                        );
                    }
                }
                Ok(_) => {}
            }
        }
    }
});
