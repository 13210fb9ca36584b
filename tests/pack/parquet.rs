//! `pack --format parquet`, Parquet input and Parquet verification.
//! What holds for every format (round trip, rollover, `--jobs`, resume, `verify` of
//! damage) is in tests/pack/conformance.rs.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::util::*;

fn reader(path: &Path) -> SerializedFileReader<std::fs::File> {
    SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap()
}

fn parquet_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    files
}

#[test]
fn samples_pack_to_parquet_with_the_requested_layout() {
    let out = Tree::new();
    let (code, report) = run_json(&[
        "pack",
        samples().to_str().unwrap(),
        &out.s("d"),
        "--format",
        "parquet",
        "--row-group-size",
        "4",
        "--compression",
        "snappy",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 32);
    let files = parquet_files(&out.join("d"));
    assert_eq!(files.len(), 1);
    let meta = reader(&files[0]).metadata().clone();
    assert_eq!(meta.file_metadata().num_rows(), 32);
    assert_eq!(meta.num_row_groups(), 8, "4 rows per row group");
    let schema = meta.file_metadata().schema_descr();
    let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["key", "cls", "jpg", "json", "png", "seg.png", "txt"]
    );
    let chunk = meta.row_group(0).column(2);
    assert_eq!(chunk.compression(), parquet::basic::Compression::SNAPPY);
    assert!(chunk.statistics().is_some(), "statistics written");
    assert!(
        meta.page_index().is_none(),
        "page index is read on request only"
    );
    assert!(
        chunk.column_index_offset().is_some() && chunk.offset_index_offset().is_some(),
        "page index written"
    );
    assert!(
        chunk.dictionary_page_offset().is_none(),
        "no dictionary for a binary column"
    );
    assert_eq!(run(&["verify", &out.s("d")]).status.code(), Some(0));
}

#[test]
fn parquet_input_reshards_to_every_format_keeping_order() {
    let raw = corpus(60, 3000);
    let out = Tree::new();
    assert!(
        run(&[
            "pack",
            raw.path().to_str().unwrap(),
            &out.s("pq"),
            "--format",
            "parquet",
            "--shard-size",
            "64KiB"
        ])
        .status
        .success()
    );
    // A Parquet output (manifest.json and SHA256SUMS beside the shards) is a Parquet input.
    // Parquet → WebDataset: every member equals the raw file it came from.
    let (code, report) = run_json(&[
        "pack",
        &out.s("pq"),
        &out.s("wds"),
        "--format",
        "webdataset",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 60);
    let mut archive =
        tar::Archive::new(std::fs::File::open(out.join("wds/shard-000000.tar")).unwrap());
    let mut members = 0;
    let mut previous = String::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
        assert_eq!(std::fs::read(raw.join(&name)).unwrap(), data, "{name}");
        let key = name.split('.').next().unwrap().to_string();
        assert!(key >= previous, "row order kept");
        previous = key;
        members += 1;
    }
    assert!(members >= 120);
    // Parquet → MDS and Parquet → Parquet.
    for format in ["mds", "parquet"] {
        let (code, report) = run_json(&["pack", &out.s("pq"), &out.s(format), "--format", format]);
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["samples"], 60, "{format}");
        assert_eq!(run(&["verify", &out.s(format)]).status.code(), Some(0));
    }
    let o = run(&["pack", &out.s("pq"), &out.s("x"), "--shuffle"]);
    assert!(
        text(&o.stderr).contains("Parquet input keeps its rows in order"),
        "{}",
        text(&o.stderr)
    );
    let o = run(&["pack", &out.s("pq"), &out.s("y"), "--input-format", "files"]);
    assert!(
        o.status.success(),
        "the .parquet files themselves as raw files"
    );
}

#[test]
fn parquet_damage_is_found() {
    let input = corpus(80, 4000);
    let out = Tree::new();
    assert!(
        run(&[
            "pack",
            input.path().to_str().unwrap(),
            &out.s("d"),
            "--format",
            "parquet",
            "--shard-size",
            "128KiB"
        ])
        .status
        .success()
    );
    let d = out.join("d");
    let first = parquet_files(&d)[0].clone();
    let name = first.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = std::fs::read(&first).unwrap();
    // Truncated: the footer is gone.
    std::fs::write(&first, &bytes[..bytes.len() / 2]).unwrap();
    let (code, report) = run_json(&["verify", d.to_str().unwrap()]);
    assert_eq!(code, 1);
    let kinds: Vec<(String, String, Option<u64>)> = findings(&report);
    assert!(
        kinds.contains(&(
            "truncated".into(),
            name.clone(),
            Some(bytes.len() as u64 / 2)
        )),
        "{kinds:?}"
    );
    // Zeroed block in the middle: the manifest locates it. (Our pages hold opaque
    // bytes and parquet-rs writes no page checksums, so decoding alone may not notice.)
    let mut zeroed = bytes.clone();
    let mid = bytes.len() / 3;
    zeroed[mid..mid + 4096].fill(0);
    std::fs::write(&first, &zeroed).unwrap();
    let (code, report) = run_json(&["verify", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    let hash = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "hash_mismatch")
        .expect("hash mismatch");
    assert_eq!(hash["path"], name.as_str());
    assert!(
        hash["offset"].as_u64().unwrap() <= mid as u64
            && hash["end"].as_u64().unwrap() > mid as u64,
        "{hash}"
    );
    // Without a manifest, a destroyed footer is still found.
    let footer_len =
        u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
    let mut footerless = bytes.clone();
    let n = footerless.len();
    footerless[n - 8 - footer_len..n - 8].fill(0);
    std::fs::write(&first, &footerless).unwrap();
    std::fs::remove_file(d.join("manifest.json")).unwrap();
    std::fs::remove_file(d.join("SHA256SUMS")).unwrap();
    let (code, report) = run_json(&["verify", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        findings(&report),
        [(
            "bad_header".to_string(),
            name.clone(),
            Some((n - 8 - footer_len) as u64)
        )]
    );
}

#[test]
fn int32_and_static_ndarray_columns_have_their_parquet_types() {
    let input = Tree::new();
    for i in 0..5u8 {
        input.file(&format!("s{i}.cls"), format!("{}", -7 * i32::from(i)));
        input.file(&format!("s{i}.npy"), npy("|u1", &[2, 3], &[i; 6]));
    }
    // A value of another shape is left out with its sample, not stored mis-sized.
    input.file("s5.cls", "1");
    input.file("s5.npy", npy("|u1", &[3, 2, 1], &[9; 6]));
    let out = Tree::new();
    let o = run(&[
        "pack",
        &input.s(""),
        &out.s("d"),
        "--format",
        "parquet",
        "--column",
        "cls:int32",
        "--column",
        "npy:ndarray:uint8:2,3",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let skipped = &manifest(&out.join("d"))["skipped"];
    assert!(
        skipped.to_string().contains("s5.npy") && skipped.to_string().contains("shape"),
        "{skipped}"
    );
    let file = &parquet_files(&out.join("d"))[0];
    let meta = reader(file).metadata().clone();
    let schema = meta.file_metadata().schema_descr();
    let col = |name: &str| {
        schema
            .columns()
            .iter()
            .find(|c| c.name() == name)
            .unwrap()
            .clone()
    };
    assert_eq!(col("cls").physical_type(), parquet::basic::Type::INT32);
    assert_eq!(
        col("npy").physical_type(),
        parquet::basic::Type::FIXED_LEN_BYTE_ARRAY
    );
    assert_eq!(col("npy").type_length(), 6);
    // The Arrow schema a reader sees carries the dtype and shape.
    let arrow =
        parquet::arrow::parquet_to_arrow_schema(schema, meta.file_metadata().key_value_metadata())
            .unwrap();
    let field = arrow.field_with_name("npy").unwrap();
    assert_eq!(field.metadata()["dtype"], "uint8");
    assert_eq!(field.metadata()["shape"], "[2,3]");
    let rows: Vec<_> = reader(file)
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().to_string())
        .collect();
    assert_eq!(rows.len(), 5);
    assert!(rows[3].contains("cls: -21"), "{}", rows[3]);
    assert_eq!(run(&["verify", &out.s("d")]).status.code(), Some(0));
}
