//! MDS input over datasets our own MDS writer wrote: values, order, compression,
//! merged indices, and damaged datasets.

use shardsmith_manifest::Classify;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use shardsmith_store::LocalTree;

use super::values::npy;
use super::*;
use crate::Result;
use crate::columns::ArrayDtype;
use crate::columns::Encoding;
use crate::content::Validation;
use crate::format::{Field, Payload, ShardFormat, ShardOut};
use crate::mds::{Mds, MdsCompression, MdsOptions};
use crate::sample::{FieldSpec, Loaded, SampleSource, SampleSpec};
use shardsmith_manifest::Skipped;
use shardsmith_store::InputSource;

pub(super) type Sample = (String, Vec<(String, Vec<u8>)>);

/// Writes `samples` with our MDS writer into `dir`, `per_shard` samples a shard, with
/// `columns` as `--column` overrides; returns the shard file names.
pub(super) fn write(
    dir: &Path,
    compression: Option<&str>,
    columns: &[(&str, &str)],
    samples: &[Sample],
    per_shard: usize,
) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    let options = MdsOptions {
        compression: compression.and_then(|c| MdsCompression::parse(c).unwrap()),
        hashes: vec!["xxh64".into()],
    };
    let overrides: BTreeMap<String, Encoding> = columns
        .iter()
        .map(|(n, e)| (n.to_string(), Encoding::parse(e).unwrap()))
        .collect();
    let specs: Vec<SampleSpec> = samples
        .iter()
        .map(|(key, fields)| SampleSpec {
            key: key.clone(),
            fields: fields
                .iter()
                .map(|(n, v)| FieldSpec::new(n, v.len() as u64))
                .collect(),
            origin: 0,
        })
        .collect();
    let mds = Mds::new(&options, &overrides, "key", 1 << 26, &specs).unwrap();
    let mut names = Vec::new();
    let mut facts = Vec::new();
    for (n, chunk) in samples.chunks(per_shard).enumerate() {
        let (mut out, bytes) = ShardOut::memory();
        let mut encoder = mds.encoder();
        for (key, values) in chunk {
            let mut sorted: Vec<&(String, Vec<u8>)> = values.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let mut fields: Vec<Field<'_>> = sorted
                .iter()
                .map(|(name, v)| Field {
                    ext: name,
                    size: v.len() as u64,
                    payload: Payload::Bytes(v),
                })
                .collect();
            encoder.add(&mut out, key, &mut fields).unwrap();
        }
        facts.push(encoder.finish(&mut out).unwrap());
        let name = mds.shard_name("", n);
        std::fs::write(dir.join(&name), &*bytes.lock().unwrap()).unwrap();
        names.push(name);
    }
    let shards: Vec<(&str, &Value)> = names.iter().map(String::as_str).zip(&facts).collect();
    for file in mds.dataset_files(&shards).unwrap() {
        std::fs::write(dir.join(&file.name), &file.bytes).unwrap();
    }
    names
}

pub(super) fn open(dir: &Path, key: &str, scratch: Option<&Path>) -> Result<MdsDataset> {
    MdsDataset::open(
        Arc::new(LocalTree::new(dir)),
        &dir.display().to_string(),
        key,
        scratch.map(Path::to_path_buf),
    )
}

/// Every listed sample with its field bytes, read through a reader.
pub(super) fn read_all(dataset: &MdsDataset) -> (Vec<Sample>, Vec<Skipped>) {
    let listing = dataset.samples().unwrap();
    let mut reader = dataset.reader(&listing.samples, Validation::Cheap).unwrap();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for (i, sample) in listing.samples.iter().enumerate() {
        let Ok(Loaded::Memory(ranges)) = reader.load(i, &mut buf).unwrap() else {
            panic!("sample {i} not loaded");
        };
        let fields = sample
            .fields
            .iter()
            .zip(ranges)
            .map(|(f, (a, b))| {
                assert_eq!(f.size, (b - a) as u64);
                (f.ext.to_string(), buf[a..b].to_vec())
            })
            .collect();
        out.push((sample.key.clone(), fields));
    }
    (out, listing.skipped)
}

fn corpus(n: usize) -> Vec<Sample> {
    (0..n)
        .map(|i| {
            let values: Vec<u8> = (0..(i as u16 + 1) * 3)
                .flat_map(|v| v.to_le_bytes())
                .collect();
            let fields = vec![
                (
                    "arr".to_string(),
                    npy(ArrayDtype::U16, &[3, i as u64 + 1], &values),
                ),
                (
                    "cls".to_string(),
                    format!("{}", i as i64 * 7 - 20).into_bytes(),
                ),
                ("jpg".to_string(), vec![0xff, 0xd8, i as u8, 0xff, 0xd9]),
                ("json".to_string(), format!("{{\"i\": {i}}}").into_bytes()),
                (
                    "score".to_string(),
                    format!("{}", i as f32 / 8.0).into_bytes(),
                ),
                (
                    "tri".to_string(),
                    npy(ArrayDtype::U16, &[3], &[1, 0, 2, 0, i as u8, 0]),
                ),
                ("txt".to_string(), format!("héllo {i}").into_bytes()),
                ("empty".to_string(), Vec::new()),
            ];
            (format!("sample/ü{i:03}"), fields)
        })
        .collect()
}

const COLUMNS: [(&str, &str); 4] = [
    ("arr", "ndarray"),
    ("cls", "int"),
    ("score", "float32"),
    ("tri", "ndarray:uint16:3"),
];

fn sorted(samples: &[Sample]) -> Vec<Sample> {
    samples
        .iter()
        .map(|(k, f)| {
            let mut f = f.clone();
            f.sort();
            (k.clone(), f)
        })
        .collect()
}

#[test]
fn a_dataset_reads_back_every_key_and_field_byte_in_index_order() {
    let dir = tempfile::tempdir().unwrap();
    let samples = corpus(7);
    let names = write(dir.path(), None, &COLUMNS, &samples, 3);
    assert_eq!(names.len(), 3);
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, skipped) = read_all(&dataset);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(read, sorted(&samples));

    let encodings = dataset.suggested_encodings();
    let shown: Vec<String> = encodings.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    assert_eq!(
        shown,
        [
            "arr:ndarray",
            "cls:int",
            "empty:bytes",
            "jpg:bytes",
            "json:json",
            "score:float32",
            "tri:ndarray:uint16:3",
            "txt:str"
        ]
    );
    let listing = dataset.samples().unwrap();
    let fourth = &listing.samples[4];
    assert_eq!(fourth.origin, 4);
    assert_eq!(dataset.container(fourth).unwrap(), "shard.00001.mds");
    assert_eq!(
        dataset.field_path(fourth, &fourth.fields[1]),
        "shard.00001.mds#sample=1:cls"
    );
    let head = dataset.head(fourth, &fourth.fields[0], 6).unwrap();
    assert_eq!(head, b"\x93NUMPY");
    assert!(dataset.shuffle_refusal().is_none());
}

#[test]
fn every_compression_reads_back_from_scratch_and_from_memory() {
    let samples = corpus(5);
    for compression in ["zstd", "zstd:7", "gz", "gz:1", "bz2", "br:5", "snappy"] {
        let dir = tempfile::tempdir().unwrap();
        let names = write(dir.path(), Some(compression), &COLUMNS, &samples, 2);
        let ext = compression.split(':').next().unwrap();
        assert_eq!(names[0], format!("shard.00000.mds.{ext}"));
        let scratch = tempfile::tempdir().unwrap();
        for place in [Some(scratch.path()), None] {
            let dataset = open(dir.path(), "key", place).unwrap();
            let (read, skipped) = read_all(&dataset);
            assert!(skipped.is_empty());
            assert_eq!(read, sorted(&samples), "{compression}");
            let last = dataset.samples().unwrap().samples.pop().unwrap();
            assert_eq!(dataset.container(&last).unwrap(), names[2]);
            assert_eq!(dataset.shuffle_refusal().is_some(), place.is_none());
        }
        // Scratch copies are unnamed files: nothing is left behind.
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    }
}

#[test]
fn the_raw_file_is_read_when_both_are_present() {
    let dir = tempfile::tempdir().unwrap();
    let samples = corpus(2);
    write(dir.path(), Some("zstd"), &COLUMNS, &samples, 2);
    let packed = std::fs::read(dir.path().join("shard.00000.mds.zstd")).unwrap();
    let mut raw = MdsCompression::decompress(crate::mds::Family::Zstd, &packed, 1 << 30).unwrap();
    // Same size, another value: proves which file was read.
    let at = raw.windows(5).position(|w| w == b"llo 1").unwrap();
    raw[at] = b'L';
    std::fs::write(dir.path().join("shard.00000.mds"), &raw).unwrap();
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, _) = read_all(&dataset);
    let txt = &read[1].1.iter().find(|f| f.0 == "txt").unwrap().1;
    assert_eq!(txt, "héLlo 1".as_bytes());
    let first = dataset.samples().unwrap().samples.remove(0);
    assert_eq!(dataset.container(&first).unwrap(), "shard.00000.mds");
}

/// Writes partitions `0` and `1` and a root index as streaming's `merge_index` does.
fn merged(dir: &Path, first: &[Sample], second: &[Sample], compression: Option<&str>) {
    let mut shards = Vec::new();
    for (part, samples) in [("0", first), ("1", second)] {
        write(&dir.join(part), compression, &COLUMNS, samples, 2);
        let index: Value =
            serde_json::from_slice(&std::fs::read(dir.join(part).join("index.json")).unwrap())
                .unwrap();
        for mut shard in index["shards"].as_array().unwrap().clone() {
            for which in ["raw_data", "zip_data"] {
                if let Some(base) = shard[which]["basename"].as_str() {
                    shard[which]["basename"] = format!("{part}/{base}").into();
                }
            }
            shards.push(shard);
        }
    }
    let index = serde_json::json!({"version": 2, "shards": shards});
    std::fs::write(dir.join("index.json"), index.to_string()).unwrap();
}

#[test]
fn a_merged_index_reads_shards_in_sub_directories() {
    let dir = tempfile::tempdir().unwrap();
    let samples = corpus(5);
    merged(dir.path(), &samples[..3], &samples[3..], Some("snappy"));
    let scratch = tempfile::tempdir().unwrap();
    let dataset = open(dir.path(), "key", Some(scratch.path())).unwrap();
    let (read, _) = read_all(&dataset);
    assert_eq!(read, sorted(&samples));
    let listing = dataset.samples().unwrap();
    assert_eq!(
        dataset.container(&listing.samples[4]).unwrap(),
        "1/shard.00000.mds.snappy"
    );
    assert_eq!(
        dataset.field_path(&listing.samples[4], &listing.samples[4].fields[0]),
        "1/shard.00000.mds.snappy#sample=1:arr"
    );

    // Only one shard: keys and origins stay those of the whole dataset.
    let only: BTreeSet<String> = ["1/shard.00000.mds".to_string()].into();
    let dataset = open(dir.path(), "no_such_column", None)
        .unwrap()
        .only_shards(&only);
    let listing = dataset.samples().unwrap();
    let keys: Vec<&str> = listing.samples.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["000000003", "000000004"]);
    // Without the key column, the key is a field like any other.
    let (read, _) = read_all(&dataset);
    let key = &read[0].1.iter().find(|f| f.0 == "key").unwrap().1;
    assert_eq!(key, "sample/ü003".as_bytes());
}

#[test]
fn repeated_keys_are_refused_unless_prefixed_by_the_shard_path() {
    use crate::keys::{KeyPrefix, check_unique};
    let dir = tempfile::tempdir().unwrap();
    let samples = corpus(3);
    merged(dir.path(), &samples, &samples[1..], None);
    let dataset = open(dir.path(), "key", None).unwrap();
    let (read, skipped) = read_all(&dataset);
    assert_eq!(read.len(), 5);
    assert!(skipped.is_empty(), "{skipped:?}");
    let listing = dataset.samples().unwrap();
    let err = check_unique(&dataset, &listing.samples, KeyPrefix::None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("key `sample/ü001` is used twice, by `0/shard.00000.mds#sample=1:")
            && err.contains("and by `1/shard.00000.mds#sample=0:")
            && err.contains("--key-prefix path"),
        "{err}"
    );
    let dataset = open(dir.path(), "key", None)
        .unwrap()
        .with_key_prefix(KeyPrefix::Path);
    let listing = dataset.samples().unwrap();
    check_unique(&dataset, &listing.samples, KeyPrefix::Path).unwrap();
    assert_eq!(listing.samples[3].key, "1/shard.00000/sample/ü001");
}

fn error_of(dir: &Path) -> String {
    let dataset = match open(dir, "key", None) {
        Ok(d) => d,
        Err(e) => return e.to_string(),
    };
    let e = dataset.samples().unwrap_err();
    assert_eq!(e.kind(), "bad_input");
    e.to_string().replace(&dir.display().to_string(), "ROOT")
}

#[test]
fn a_missing_shard_is_named_with_the_index() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), None, &COLUMNS, &corpus(4), 2);
    std::fs::remove_file(dir.path().join("shard.00001.mds")).unwrap();
    assert_eq!(
        error_of(dir.path()),
        "input `ROOT/shard.00001.mds` does not exist, but index.json lists it (shard entry 1)"
    );
    let dir = tempfile::tempdir().unwrap();
    merged(dir.path(), &corpus(2), &corpus(4)[2..], Some("gz"));
    std::fs::remove_file(dir.path().join("1/shard.00000.mds.gz")).unwrap();
    assert_eq!(
        error_of(dir.path()),
        "input `ROOT/1/shard.00000.mds.gz` does not exist (nor does 1/shard.00000.mds), but index.json lists it (shard entry 1)"
    );
}

#[test]
fn a_truncated_or_miscounted_shard_is_named_with_the_sample_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), None, &[], &corpus(3), 3);
    let shard = dir.path().join("shard.00000.mds");
    let full = std::fs::read(&shard).unwrap();
    let len = full.len();
    std::fs::write(&shard, &full[..len - 10]).unwrap();
    assert_eq!(
        error_of(dir.path()),
        format!(
            "input `ROOT/shard.00000.mds` is {} bytes, index.json says {len} (shard entry 0)",
            len - 10
        )
    );
    // Without the size in the index, the offsets tell.
    let path = dir.path().join("index.json");
    let mut index: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    index["shards"][0]["raw_data"]["bytes"] = Value::Null;
    std::fs::write(&path, index.to_string()).unwrap();
    let ends = |i: usize| u32::from_le_bytes(full[8 + 4 * i..12 + 4 * i].try_into().unwrap());
    assert_eq!(
        error_of(dir.path()),
        format!(
            "input `ROOT/shard.00000.mds` is truncated: sample 2 ends at byte {} (offset at byte 16), past the end of the file ({} bytes)",
            ends(2),
            len - 10
        )
    );
    std::fs::write(&shard, &full).unwrap();
    index["shards"][0]["samples"] = 4.into();
    std::fs::write(&path, index.to_string()).unwrap();
    assert_eq!(
        error_of(dir.path()),
        "input `ROOT/shard.00000.mds` holds 3 samples (header at byte 0), the index lists 4"
    );
}

#[test]
fn a_bad_index_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), None, &[], &corpus(1), 1);
    let path = dir.path().join("index.json");
    let good = std::fs::read_to_string(&path).unwrap();
    let cases: [(String, &str); 5] = [
        ("{not json".into(), "is not valid JSON"),
        (
            good.replace("\"version\": 2}", "\"version\": 1}"),
            "has version 1; MDS indices have version 2",
        ),
        (
            good.replace("\"samples\": 1, ", ""),
            "shard entry 0: has no `samples` key",
        ),
        (
            good.replace("shard.00000.mds\"", "../x.mds\""),
            "basename `../x.mds` is not a relative path",
        ),
        (
            good.replace("\"str\"", "\"bogus\""),
            "column `key` has encoding `bogus`",
        ),
    ];
    let source: Arc<dyn InputSource> = Arc::new(LocalTree::new(dir.path()));
    assert!(is_mds_input(&*source, None));
    assert!(is_mds_input(&*source, Some("index.json")));
    assert!(!is_mds_input(&*source, Some("shard.00000.mds")));
    for (text, want) in cases {
        std::fs::write(&path, &text).unwrap();
        let e = open(dir.path(), "key", None).err().expect("refused");
        assert_eq!(e.kind(), "bad_input");
        let shown = e.to_string();
        assert!(
            shown.contains("index.json") && shown.contains(want),
            "{shown}"
        );
    }
    std::fs::write(&path, good.replace("\"mds\"", "\"json\"")).unwrap();
    assert!(!is_mds_input(&*source, None));
    std::fs::remove_file(&path).unwrap();
    assert!(!is_mds_input(&*source, None));
    let e = open(dir.path(), "key", None).err().expect("refused");
    assert_eq!(
        e.to_string()
            .replace(&dir.path().display().to_string(), "ROOT"),
        "input `ROOT/index.json` does not exist (an MDS dataset has one at its root)"
    );
}

#[test]
fn samples_read_in_any_order_and_one_shard_is_found_by_its_compressed_name() {
    let samples = corpus(9);
    for compression in [None, Some("zstd")] {
        let dir = tempfile::tempdir().unwrap();
        let names = write(dir.path(), compression, &COLUMNS, &samples, 4);
        let dataset = open(dir.path(), "key", None).unwrap();
        let mut listing = dataset.samples().unwrap().samples;
        listing.reverse();
        let mut reader = dataset.reader(&listing, Validation::Cheap).unwrap();
        let mut buf = Vec::new();
        for (i, sample) in listing.iter().enumerate() {
            let Ok(Loaded::Memory(ranges)) = reader.load(i, &mut buf).unwrap() else {
                panic!("sample {i} not loaded");
            };
            let (a, b) = ranges[7];
            assert_eq!(sample.fields[7].ext.as_ref(), "txt");
            let n = 8 - i;
            assert_eq!(&buf[a..b], format!("héllo {n}").as_bytes());
            let head = dataset.head(sample, &sample.fields[7], 3).unwrap();
            assert_eq!(head, "hé".as_bytes());
        }
        let only: BTreeSet<String> = [names[2].clone()].into();
        let dataset = open(dir.path(), "key", None).unwrap().only_shards(&only);
        let (read, _) = read_all(&dataset);
        assert_eq!(read, sorted(&samples[8..]));
    }
}
