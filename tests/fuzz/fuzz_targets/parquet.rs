//! A Parquet file: magic at both ends, footer, and every row group decoded (`verify`);
//! then the same bytes as `pack`'s Parquet input: every row listed (nested values as
//! JSON) and read back, and what a Parquet output would parse back from that JSON.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use shardsmith_shard::columns::Encoding;
use shardsmith_shard::content::Validation;
use shardsmith_shard::parquet::input::ParquetRows;
use shardsmith_shard::parquet::nested;
use shardsmith_shard::sample::{Loaded, SampleSource};
use shardsmith_store::{InputSource, LocalTree};

fuzz_target!(|data: &[u8]| {
    // Under the targets' 256 MiB allocation limit: pages and rows over 64 MiB are
    // refused before they are decompressed, which is what is being tested.
    shardsmith_shard::parquet::set_decode_limit(64 << 20);
    let root = shardsmith_fuzz::scratch();
    let rel = "part-000000.parquet";
    let entry = shardsmith_fuzz::entry(rel, data, "parquet");
    let inspection = shardsmith_fuzz::inspect(&root, rel, data, Some(&entry), None);
    shardsmith_fuzz::report(inspection.as_ref());

    let input = root.join("in");
    shardsmith_fuzz::write(&input, rel, data);
    let tree: Arc<dyn InputSource> = Arc::new(LocalTree::new(&input));
    let Ok(rows) = ParquetRows::open(tree, "in", None, "key") else {
        return;
    };
    let encodings = rows.suggested_encodings();
    let Ok(listing) = rows.samples() else {
        return;
    };
    let Ok(mut reader) = rows.reader(&listing.samples, Validation::Cheap) else {
        return;
    };
    let mut buf = Vec::new();
    for (i, sample) in listing.samples.iter().enumerate().take(256) {
        buf.clear();
        let Ok(Ok(Loaded::Memory(ranges))) = reader.load(i, &mut buf) else {
            break;
        };
        for (field, (start, end)) in sample.fields.iter().zip(ranges) {
            // A nested value written as JSON reads back into its column's type: what
            // a Parquet output of this input does with it.
            if let Some(Encoding::Nested(data_type)) = encodings.get(&*field.ext)
                && nested::carries(data_type)
            {
                let value = &buf[start..end];
                if let Err(e) = nested::from_json(data_type, &[Some(value)]) {
                    panic!(
                        "{data_type}: {} does not read back: {e}",
                        String::from_utf8_lossy(value)
                    );
                }
            }
        }
    }
});
