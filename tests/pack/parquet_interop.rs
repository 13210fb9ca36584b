//! Parquet output read by pyarrow 26, against raw and Parquet input.

use crate::interop::{check, python};
use crate::util::*;

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn pyarrow_reads_every_key_and_byte() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    for (name, args) in [
        ("zstd", vec![]),
        ("snappy", vec!["--compression", "snappy"]),
        (
            "none",
            vec!["--compression", "none", "--row-group-size", "1MiB"],
        ),
    ] {
        let dir = out.s(name);
        let o = cmd()
            .args([
                "pack",
                samples().to_str().unwrap(),
                &dir,
                "--format",
                "parquet",
                "--shard-size",
                "16KiB",
            ])
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        check("check_parquet.py", &[samples().to_str().unwrap(), &dir]);
    }
    let big = corpus(300, 20_000);
    let o = cmd()
        .args([
            "pack",
            big.path().to_str().unwrap(),
            &out.s("big"),
            "--format",
            "parquet",
            "--shard-size",
            "512KiB",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    check(
        "check_parquet.py",
        &[big.path().to_str().unwrap(), &out.s("big")],
    );
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn pyarrow_written_input_with_nulls_and_repeated_keys() {
    let Some(python) = python() else { return };
    let src = Tree::new();
    let script = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq
root = sys.argv[1]
for part in range(2):
    n = 300
    ids = [f"doc{part}_{i:04d}" for i in range(n)]
    ids[5] = ids[4]        # a repeated key
    ids[7] = None          # a null key
    t = pa.table({"id": pa.array(ids), "text": pa.array([("héllo 😀 " * (i % 5)) if i % 9 else None for i in range(n)]),
                  "score": pa.array([i / 8 for i in range(n)]), "n": pa.array(list(range(n)), pa.int32()),
                  "blob": pa.array([bytes([i % 256]) * (i % 4) for i in range(n)], pa.binary())})
    pq.write_table(t, f"{root}/part-{part}.parquet", row_group_size=64)
"#;
    let o = std::process::Command::new(&python)
        .args(["-c", script, src.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = Tree::new();
    // A key used twice in one file: pyarrow reads both rows, so packing one of them
    // would lose the other, and readers of the output would confuse them. Refused,
    // naming both rows; no prefix can tell them apart.
    let (code, report) = run_json(&[
        "pack",
        src.path().to_str().unwrap(),
        &out.s("d"),
        "--format",
        "parquet",
        "--key-column",
        "id",
    ]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "key_collision");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "input key `doc0_0004` is used twice, by `part-0.parquet#row=4:blob` and by `part-0.parquet#row=5:blob`"
        ) && message.contains("both are in `part-0.parquet`"),
        "{message}"
    );
    // The input without the repeated row; rows with a null key are left out, listed.
    let fix = r#"
import sys, glob, pyarrow.parquet as pq
for f in glob.glob(sys.argv[1] + "/*.parquet"):
    t = pq.read_table(f)
    pq.write_table(t.take([i for i in range(t.num_rows) if i != 5]), f)
"#;
    assert!(
        std::process::Command::new(&python)
            .args(["-c", fix, src.path().to_str().unwrap()])
            .status()
            .unwrap()
            .success()
    );
    let (code, report) = run_json(&[
        "pack",
        src.path().to_str().unwrap(),
        &out.s("d"),
        "--format",
        "parquet",
        "--key-column",
        "id",
    ]);
    assert_eq!(code, 0, "{report}");
    let skipped: Vec<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|r| r.contains("key column `id` is null"))
    );
    // The checker reads the same input with pyarrow; rows the pack left out are dropped there too.
    let fix = r#"
import sys, glob, pyarrow.parquet as pq
for f in glob.glob(sys.argv[1] + "/*.parquet"):
    t = pq.read_table(f)
    pq.write_table(t.take([i for i, k in enumerate(t.column("id").to_pylist()) if k is not None]), f)
"#;
    assert!(
        std::process::Command::new(&python)
            .args(["-c", fix, src.path().to_str().unwrap()])
            .status()
            .unwrap()
            .success()
    );
    check(
        "check_parquet.py",
        &[
            src.path().to_str().unwrap(),
            &out.s("d"),
            "--key-column",
            "id",
        ],
    );
}
