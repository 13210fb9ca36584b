//! The real Python readers (webdataset 1.0.2, wids 0.1.11) read what we write, exactly.
//!
//! Needs `SHARDSMITH_PYTHON` (the interpreter of `tests/interop/setup_env.sh`'s venv;
//! tests/setup.sh sets it), so its tests are ignored unless asked for (tests/README.md);
//! asked for without it, they fail under CI (where skipping would hide a broken set-up).

use std::path::{Path, PathBuf};

use crate::util::*;

pub fn python() -> Option<PathBuf> {
    server_bin("SHARDSMITH_PYTHON", "python env")
}

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop")
}

/// Runs the interop env's Python with `args` (a script and its arguments), the torch
/// stub and `tests/interop` on `PYTHONPATH` (wids and streaming import torch at module
/// level: the stub stands in for it) and `env` besides; asserts that it exited 0 and
/// returns its stdout. `None` without `SHARDSMITH_PYTHON` (see [`python`] and
/// [`missing`]). Every test that runs a Python reader goes through here.
pub fn run_python(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<String> {
    let python = python()?;
    let interop = interop_dir();
    let path = std::env::join_paths([interop.join("torchstub"), interop.clone()]).unwrap();
    let o = std::process::Command::new(python)
        .args(args)
        .env("PYTHONPATH", path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{stdout}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
    Some(stdout)
}

/// The torch env's interpreter (`SHARDSMITH_TORCH_PYTHON`, set by tests/run_all.sh from
/// `tests/interop/setup_env.sh torch`): real torch, `torch.distributed.checkpoint`,
/// safetensors and zstandard. `None` when it is unset and [`missing`] lets the test pass.
pub fn torch_python() -> Option<PathBuf> {
    server_bin("SHARDSMITH_TORCH_PYTHON", "torch env")
}

/// Runs the torch env's Python with `args` (a script under `tests/interop` and its
/// arguments), `tests/interop` on `PYTHONPATH` (no torch stub: this is the real one);
/// asserts that it exited 0 and returns its stdout. `None` without the torch env (see
/// [`torch_python`]). Scripts report a reader's verdict as data on stdout rather than by
/// failing, so a test asserts it beside shardsmith's.
pub fn run_torch(args: &[&str]) -> Option<String> {
    let python = torch_python()?;
    let o = std::process::Command::new(python)
        .args(args)
        .current_dir(interop_dir())
        .env("PYTHONPATH", interop_dir())
        .env("OMP_NUM_THREADS", "1")
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{stdout}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
    Some(stdout)
}

/// Runs `tests/interop/SCRIPT ARGS...` (see [`run_python`]) and asserts that every check
/// it made passed (`N passed, 0 failed`), showing its output if not.
pub fn check(script: &str, args: &[&str]) {
    // streaming's StreamingDataset names its shared memory by the first free prefix
    // number, and two processes that start together can pick the same one
    // (`FileExistsError: '/000374_locals'`): the scripts that use it take turns.
    static STREAMING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = (script == "check_mds.py").then(|| {
        STREAMING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    let path = interop_dir().join(script);
    let mut all = vec![path.to_str().unwrap()];
    all.extend(args);
    let Some(stdout) = run_python(&all, &[]) else {
        return;
    };
    assert!(
        stdout.contains(" passed, 0 failed"),
        "{script} {args:?}: the python readers disagree:\n{stdout}"
    );
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_the_samples_exactly() {
    if python().is_none() {
        return;
    }
    let out = Tree::new();
    assert!(
        run(&[
            "pack",
            samples().to_str().unwrap(),
            &out.s("s"),
            "--shard-size",
            "48KiB"
        ])
        .status
        .success()
    );
    check(
        "check_webdataset.py",
        &[samples().to_str().unwrap(), &out.s("s")],
    );
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_edge_cases_exactly() {
    if python().is_none() {
        return;
    }
    let t = Tree::new();
    for (i, size) in [0usize, 1, 511, 512, 513, 1023, 1024, 65_536, 200_000]
        .into_iter()
        .enumerate()
    {
        t.file(&format!("sizes/s{i:02}.bin"), noise(i as u64, size));
        t.file(&format!("sizes/s{i:02}.txt"), format!("{size} bytes"));
    }
    // Member names of exactly 100 bytes (key 96 + ".jpg").
    let key = format!("{}/{}", "n".repeat(40), "k".repeat(55));
    assert_eq!(key.len() + 4, 100);
    t.file(
        &format!("{key}.jpg"),
        b"\xff\xd8\xff\xe0 100-byte name \xff\xd9",
    );
    t.file(
        "multi/a.seg.png",
        b"\x89PNG\r\n\x1a\n mask \0\0\0\0IEND\xaeB`\x82",
    )
    .file("multi/a.json.gz", noise(7, 300))
    .file("multi/a.JSON", b"{\"upper\": true}")
    .file("dots.in.dirs/x.txt", b"dir names may hold dots")
    .file("utf8/ünïcødé_κλειδί.txt", "non-ASCII key".as_bytes())
    .file("utf8/space name.txt", b"spaces are fine")
    .file("deep/a/b/c/d/e/f.cls", b"7");
    for i in 0..300 {
        t.file(
            &format!("many/{i:04}.bin"),
            noise(100 + i, (i as usize * 131) % 3000),
        );
    }
    // Inputs that must be left out, not written (the checker asserts they are listed).
    t.file("noext", b"x")
        .file("many/.hidden", b"x")
        .file(&format!("{}.json", "x".repeat(100)), b"{}");
    let out = Tree::new();
    let (code, report) = run_json(&[
        "pack",
        t.path().to_str().unwrap(),
        &out.s("s"),
        "--shard-size",
        "16KiB",
        "--shuffle",
        "--seed",
        "5",
    ]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report["shards"].as_u64().unwrap() > 20,
        "many rollovers and a short last shard"
    );
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3);
    check(
        "check_webdataset.py",
        &[t.path().to_str().unwrap(), &out.s("s")],
    );
}
