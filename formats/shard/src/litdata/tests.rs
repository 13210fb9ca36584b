//! The writer's sizes against the bytes it writes, and its chunks read back by the input.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Litdata;
use super::input::LitdataDataset;
use crate::columns::Encoding;
use crate::format::{Field, Payload, ShardFormat, ShardOut};
use crate::sample::{FieldSpec, SampleSource, SampleSpec};

/// A sample's key and its fields' names and values.
type Values<'a> = (&'a str, &'a [(&'a str, &'a [u8])]);

fn sample(key: &str, fields: &[(&str, &[u8])]) -> SampleSpec {
    SampleSpec {
        key: key.into(),
        fields: fields
            .iter()
            .map(|(name, value)| FieldSpec::new(name, value.len() as u64))
            .collect(),
        origin: 0,
    }
}

#[test]
fn sample_bytes_are_exact_and_a_chunk_reads_back() {
    let values: [Values<'_>; 3] = [
        ("a", &[("bin", b"\x00\x01"), ("txt", b"one")]),
        ("b/c", &[("bin", b""), ("txt", "två".as_bytes())]),
        ("d", &[("bin", &[7; 300]), ("txt", b"")]),
    ];
    let samples: Vec<SampleSpec> = values.iter().map(|(k, f)| sample(k, f)).collect();
    let format = Litdata::new(&samples, &BTreeMap::new(), &BTreeMap::new(), 1 << 20).unwrap();
    let (mut out, buffer) = ShardOut::memory();
    let mut encoder = format.encoder();
    for (key, fields) in &values {
        let mut fields: Vec<Field<'_>> = fields
            .iter()
            .map(|(name, value)| Field {
                ext: name,
                size: value.len() as u64,
                payload: Payload::Bytes(value),
            })
            .collect();
        encoder.add(&mut out, key, &mut fields).unwrap();
    }
    let facts = encoder.finish(&mut out).unwrap();
    let bytes = buffer.lock().unwrap().clone();
    let planned: u64 = samples.iter().map(|s| format.sample_bytes(s)).sum();
    assert_eq!(bytes.len() as u64, format.shard_overhead() + planned);
    assert_eq!(facts["chunk_bytes"], bytes.len());
    assert_eq!(facts["chunk_size"], 3);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chunk-0-0.bin"), &bytes).unwrap();
    let files = format.dataset_files(&[("chunk-0-0.bin", &facts)]).unwrap();
    assert_eq!(files[0].name, "index.json");
    std::fs::write(dir.path().join("index.json"), &files[0].bytes).unwrap();
    let source = Arc::new(shardsmith_store::LocalTree::new(dir.path()));
    assert!(super::is_litdata_input(source.as_ref(), None));
    assert!(!crate::mds::input::is_mds_input(source.as_ref(), None));
    let dataset = LitdataDataset::open(source, "d").unwrap();
    let listing = dataset.samples().unwrap();
    let keys: Vec<&str> = listing.samples.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["a", "b/c", "d"]);
    assert_eq!(listing.samples[2].fields[0].size, 300);
    assert_eq!(
        dataset.suggested_encodings(),
        BTreeMap::from([
            ("bin".to_string(), Encoding::Bytes),
            ("txt".to_string(), Encoding::Str)
        ])
    );
}
