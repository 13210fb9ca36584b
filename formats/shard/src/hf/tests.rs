use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_ipc::reader::StreamReader;
use serde_json::json;
use shardsmith_manifest::{FindingKind, Inspector};

use super::dataset::dataset_files;
use super::{Hf, HfInspector};
use crate::columns::Encoding;
use crate::format::{Field, Payload, ShardFormat, ShardOut};
use crate::sample::{FieldSpec, SampleSpec};

fn sample(i: usize) -> (SampleSpec, Vec<u8>, String) {
    let bin = vec![i as u8; i % 300];
    let txt = format!("caption {i}");
    let spec = SampleSpec {
        key: format!("k{i:05}"),
        fields: vec![
            FieldSpec::new("bin", bin.len() as u64),
            FieldSpec::new("txt", txt.len() as u64),
        ],
        origin: 0,
    };
    (spec, bin, txt)
}

/// One shard of `samples`, its bytes and the facts the encoder returned.
fn encode(format: &Hf, samples: &[(SampleSpec, Vec<u8>, String)]) -> (Vec<u8>, serde_json::Value) {
    let (mut out, buffer) = ShardOut::memory();
    let mut encoder = format.encoder();
    for (spec, bin, txt) in samples {
        let mut fields = vec![
            Field {
                ext: "bin",
                size: bin.len() as u64,
                payload: Payload::Bytes(bin),
            },
            Field {
                ext: "txt",
                size: txt.len() as u64,
                payload: Payload::Bytes(txt.as_bytes()),
            },
        ];
        encoder.add(&mut out, &spec.key, &mut fields).unwrap();
    }
    let facts = encoder.finish(&mut out).unwrap();
    let bytes = buffer.lock().unwrap().clone();
    (bytes, facts)
}

#[test]
fn a_shard_reads_back_and_stays_within_its_planned_bytes() {
    for count in [1, 7, 999, 1000, 1001, 2500] {
        let samples: Vec<_> = (0..count).map(sample).collect();
        let specs: Vec<SampleSpec> = samples.iter().map(|s| s.0.clone()).collect();
        let format = Hf::new("__key__", &BTreeMap::new(), &specs).unwrap();
        let (bytes, facts) = encode(&format, &samples);
        let planned =
            format.shard_overhead() + specs.iter().map(|s| format.sample_bytes(s)).sum::<u64>();
        let actual = bytes.len() as u64;
        assert!(
            actual <= planned,
            "{count} rows: {actual} > planned {planned}"
        );
        // The plan is close: within a batch's overhead and a few bytes a row.
        assert!(
            planned - actual <= format.layout.per_batch * 2 + 4 * count as u64,
            "{count} rows: {actual} vs {planned}"
        );
        assert_eq!(facts["rows"], json!(count));
        let mut read = 0;
        for batch in StreamReader::try_new(&bytes[..], None).unwrap() {
            let batch = batch.unwrap();
            let keys = batch.column(0).as_string::<i32>();
            let bins = batch.column(1).as_binary::<i32>();
            let txts = batch.column(2).as_string::<i32>();
            for r in 0..batch.num_rows() {
                let (spec, bin, txt) = &samples[read];
                assert_eq!(keys.value(r), spec.key);
                assert_eq!(bins.value(r), &bin[..]);
                assert_eq!(txts.value(r), txt);
                read += 1;
            }
        }
        assert_eq!(read, count);
        let metadata = StreamReader::try_new(&bytes[..], None).unwrap().schema();
        assert!(metadata.metadata()["huggingface"].contains("\"bin\": {\"dtype\": \"binary\""));
    }
}

#[test]
fn a_column_hf_has_no_type_for_is_refused_and_text_must_be_utf8() {
    let specs = vec![sample(3).0];
    let columns = BTreeMap::from([(
        "bin".to_string(),
        Encoding::parse("ndarray:float32:4").unwrap(),
    )]);
    let Err(err) = Hf::new("__key__", &columns, &specs) else {
        panic!("an ndarray column was accepted")
    };
    assert!(err.to_string().contains("no Hugging Face column"), "{err}");
    let format = Hf::new("__key__", &BTreeMap::new(), &specs).unwrap();
    let bad = format
        .check_values(&specs[0], &[b"x", b"\xff\xfe"])
        .unwrap_err();
    assert!(bad.to_string().contains("field `txt`"), "{bad}");
    assert!(format.check_values(&specs[0], &[b"\xff", b"ok"]).is_ok());
}

fn inspect(bytes: &[u8]) -> shardsmith_manifest::Inspection {
    let mut inspector = Box::new(HfInspector::new("data-00000.arrow"));
    for chunk in bytes.chunks(7) {
        inspector.update(chunk);
    }
    inspector.finish()
}

#[test]
fn the_inspector_counts_rows_and_names_a_damaged_stream() {
    let samples: Vec<_> = (0..1500).map(sample).collect();
    let specs: Vec<SampleSpec> = samples.iter().map(|s| s.0.clone()).collect();
    let format = Hf::new("__key__", &BTreeMap::new(), &specs).unwrap();
    let (bytes, _) = encode(&format, &samples);
    let clean = inspect(&bytes);
    assert!(clean.findings.is_empty(), "{:?}", clean.findings);
    assert_eq!(clean.samples, Some(1500));
    let kinds = |bytes: &[u8]| -> Vec<FindingKind> {
        inspect(bytes).findings.iter().map(|f| f.kind).collect()
    };
    assert_eq!(
        kinds(&bytes[..bytes.len() - 8]),
        [FindingKind::MissingEndMarker]
    );
    assert_eq!(kinds(&bytes[..bytes.len() / 2]), [FindingKind::Truncated]);
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"junk");
    assert_eq!(kinds(&longer), [FindingKind::TrailingData]);
    let mut broken = bytes.clone();
    broken[0] = 0;
    assert_eq!(kinds(&broken), [FindingKind::BadHeader]);
    // Another tool's Arrow IPC file is no damaged stream: not checked, a warning.
    let file = inspect(b"ARROW1\0\0 and the rest");
    assert_eq!(file.findings.len(), 1);
    assert_eq!(file.findings[0].kind, FindingKind::NotChecked);
    assert_eq!(
        file.findings[0].severity,
        shardsmith_manifest::Severity::Warning
    );
}

#[test]
fn dataset_files_list_the_shards_and_fingerprint_their_content() {
    let facts = [
        json!({"rows": 3, "xxh64": "00ff"}),
        json!({"rows": 1, "xxh64": "0a0b"}),
    ];
    let shards: Vec<(&str, &serde_json::Value)> = vec![
        ("data-00000.arrow", &facts[0]),
        ("data-00001.arrow", &facts[1]),
    ];
    let state = json!({"features": "{\"__key__\": {\"dtype\": \"string\", \"_type\": \"Value\"}}"});
    let files = dataset_files(&state, &shards).unwrap();
    assert_eq!(files[0].name, "dataset_info.json");
    let info: serde_json::Value = serde_json::from_slice(&files[0].bytes).unwrap();
    assert_eq!(info["features"]["__key__"]["dtype"], "string");
    let listed: serde_json::Value = serde_json::from_slice(&files[1].bytes).unwrap();
    assert_eq!(listed["_data_files"][1]["filename"], "data-00001.arrow");
    let again = dataset_files(&state, &shards).unwrap();
    assert_eq!(files[1].bytes, again[1].bytes);
    let other = [json!({"rows": 3, "xxh64": "00fe"}), facts[1].clone()];
    let changed: Vec<(&str, &serde_json::Value)> = vec![
        ("data-00000.arrow", &other[0]),
        ("data-00001.arrow", &other[1]),
    ];
    let changed: serde_json::Value =
        serde_json::from_slice(&dataset_files(&state, &changed).unwrap()[1].bytes).unwrap();
    assert_ne!(changed["_fingerprint"], listed["_fingerprint"]);
    let unknown = json!({"rows": 3});
    assert!(dataset_files(&state, &[("x.arrow", &unknown)]).is_err());
}

/// A dataset directory of `shards` shards of `per` samples each, written by [`Hf`]
/// (with the key column `key_column`), and its dataset files.
fn write_dataset(dir: &std::path::Path, key_column: &str, shards: usize, per: usize) {
    let mut facts = Vec::new();
    for s in 0..shards {
        let samples: Vec<_> = (s * per..(s + 1) * per).map(sample).collect();
        let specs: Vec<SampleSpec> = samples.iter().map(|x| x.0.clone()).collect();
        let format = Hf::new(key_column, &BTreeMap::new(), &specs).unwrap();
        let (bytes, fact) = encode(&format, &samples);
        std::fs::write(dir.join(super::format::shard_name(s)), bytes).unwrap();
        facts.push((super::format::shard_name(s), fact, format.dataset_state()));
    }
    let shards: Vec<(&str, &serde_json::Value)> =
        facts.iter().map(|(n, f, _)| (n.as_str(), f)).collect();
    for file in dataset_files(&facts[0].2, &shards).unwrap() {
        std::fs::write(dir.join(&file.name), &file.bytes).unwrap();
    }
}

fn read_all(dir: &std::path::Path, key_column: &str) -> Vec<(String, Vec<Vec<u8>>)> {
    use crate::sample::{Loaded, SampleSource};
    let source = std::sync::Arc::new(shardsmith_store::LocalTree::new(dir));
    assert!(super::input::is_hf_input(&*source, None));
    let rows = super::input::HfRows::open(source, "hf", None, key_column).unwrap();
    let listing = rows.samples().unwrap();
    assert!(listing.skipped.is_empty(), "{:?}", listing.skipped);
    let mut reader = rows
        .reader(&listing.samples, crate::content::Validation::None)
        .unwrap();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for (i, spec) in listing.samples.iter().enumerate() {
        let Ok(Loaded::Memory(ranges)) = reader.load(i, &mut buf).unwrap() else {
            panic!("loaded in memory")
        };
        let fields = ranges.iter().map(|&(a, b)| buf[a..b].to_vec()).collect();
        out.push((spec.key.clone(), fields));
    }
    out
}

#[test]
fn hf_input_reads_every_file_in_order_with_keys_or_row_numbers() {
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), "__key__", 3, 700);
    // `key`, --key-column's default, means `__key__`.
    let read = read_all(dir.path(), "key");
    assert_eq!(read.len(), 2100);
    for (i, (key, fields)) in read.iter().enumerate() {
        let (spec, bin, txt) = sample(i);
        assert_eq!(*key, spec.key);
        assert_eq!(*fields, [bin, txt.into_bytes()], "{key}");
    }
    // Without the key column, the key is the row's index in the whole dataset.
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), "id", 2, 5);
    let read = read_all(dir.path(), "key");
    let keys: Vec<&str> = read.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(keys[0], "000000000");
    assert_eq!(keys[9], "000000009");
    // Named, that column is the key again.
    let read = read_all(dir.path(), "id");
    assert_eq!(read[7].0, "k00007");
}

#[test]
fn hf_input_refuses_a_damaged_stream_without_a_panic() {
    // Found by the hf_input fuzz target: arrow-ipc 60 slices a batch's buffers out of its
    // body by the offsets the message states, and panics on one past the body's end.
    // Every byte of a good file, damaged in turn, reads or is refused.
    use crate::sample::SampleSource;
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), "__key__", 1, 3);
    let path = dir.path().join(super::format::shard_name(0));
    let good = std::fs::read(&path).unwrap();
    let mut refused = 0;
    for at in 0..good.len() {
        let mut bad = good.clone();
        bad[at] = bad[at].wrapping_add(0xa4);
        std::fs::write(&path, &bad).unwrap();
        let source = std::sync::Arc::new(shardsmith_store::LocalTree::new(dir.path()));
        let listed = super::input::HfRows::open(source, "hf", None, "key").and_then(|rows| {
            let listing = rows.samples()?;
            let mut reader = rows.reader(&listing.samples, crate::content::Validation::Full)?;
            let mut buf = Vec::new();
            for i in 0..listing.samples.len() {
                reader.load(i, &mut buf)?.ok();
            }
            Ok(())
        });
        refused += usize::from(listed.is_err());
    }
    assert!(refused > 0);
}

#[test]
fn hf_input_refuses_a_batch_of_rows_without_data() {
    // Found by the hf_input fuzz target: a batch of no column claims any number of rows
    // (2^40 in a 1 KB file), each of which the listing left out one by one.
    use std::sync::Arc;

    use arrow_array::{RecordBatch, RecordBatchOptions};
    use arrow_ipc::writer::StreamWriter;
    use arrow_schema::Schema;

    use crate::sample::SampleSource;
    let dir = tempfile::tempdir().unwrap();
    write_dataset(dir.path(), "__key__", 1, 3);
    let schema = Arc::new(Schema::empty());
    let options = RecordBatchOptions::new().with_row_count(Some(100_000));
    let batch = RecordBatch::try_new_with_options(schema.clone(), vec![], &options).unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::try_new(&mut bytes, &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    std::fs::write(dir.path().join(super::format::shard_name(0)), bytes).unwrap();
    let source = Arc::new(shardsmith_store::LocalTree::new(dir.path()));
    let rows = super::input::HfRows::open(source, "hf", None, "key").unwrap();
    let Err(err) = rows.samples() else {
        panic!("100000 rows of nothing were listed")
    };
    assert!(err.to_string().contains("claims 100000 rows"), "{err}");
}
