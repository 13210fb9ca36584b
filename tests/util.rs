//! Helpers shared by the integration tests: running the binary, building input trees,
//! reading results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// The `shardsmith` binary with progress bars off.
pub fn cmd() -> Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("shardsmith");
    cmd.env("SHARDSMITH_NO_PROGRESS", "1")
        .env_remove("RUST_BACKTRACE");
    cmd
}

/// Path of the binary, for tests that spawn and kill it.
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin!("shardsmith").to_path_buf()
}

/// Runs the binary with `args` and kills it as soon as `dir` holds `files` files whose
/// names end in `suffix` (or after a minute); returns whether it was killed before it
/// finished on its own.
pub fn run_and_kill(args: &[&str], dir: &Path, suffix: &str, files: usize) -> bool {
    run_and_kill_when(args, &[], || {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .ends_with(suffix)
                })
                .count()
            })
            .unwrap_or(0)
            >= files
    })
}

/// Runs the binary with `args` and the environment `envs`, and kills it as soon as
/// `until` holds (or after a minute); returns whether it was killed before it finished
/// on its own.
pub fn run_and_kill_when(args: &[&str], envs: &[(&str, String)], until: impl Fn() -> bool) -> bool {
    let mut child = std::process::Command::new(bin())
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !until() && std::time::Instant::now() <= deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    let _ = child.kill();
    !child.wait().unwrap().success()
}

/// The committed raw sample corpus.
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/raw")
}

/// Runs the binary with `args`; returns the output without asserting.
pub fn run(args: &[&str]) -> Output {
    cmd().args(args).output().expect("the binary runs")
}

/// Runs with `--json`, parses stdout and checks it against the reports' JSON Schema.
pub fn run_json(args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let out = run(&all);
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    });
    crate::project::report_schema::check(&value);
    (out.status.code().unwrap_or(-1), value)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A directory tree built file by file.
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str, data: impl AsRef<[u8]>) -> &Self {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
        self
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn s(&self, rel: &str) -> String {
        self.join(rel).to_string_lossy().into_owned()
    }
}

/// Deterministic pseudo-random bytes.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

/// A generated corpus of `n` samples (`cNN/sample_NNNNN.{bin,json,txt}`) with sizes
/// spread from 0 bytes to ~`max_size`.
pub fn corpus(n: usize, max_size: usize) -> Tree {
    let tree = Tree::new();
    for i in 0..n {
        let key = format!("c{:02}/sample_{i:05}", i % 7);
        let size = (i * 7919) % max_size.max(1);
        tree.file(&format!("{key}.bin"), noise(i as u64, size));
        tree.file(
            &format!("{key}.json"),
            format!("{{\"label\": {}, \"i\": {i}}}", i % 7),
        );
        tree.file(&format!("{key}.txt"), format!("caption {i}").repeat(i % 5));
    }
    tree
}

/// Every file under `dir` (recursively) with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The manifest of a dataset directory.
pub fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// `(kind, path, offset)` of every finding in a verify JSON report.
pub fn findings(report: &Value) -> Vec<(String, String, Option<u64>)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                f["offset"].as_u64(),
            )
        })
        .collect()
}

/// A `.npy` file (format 1.0, C order) holding `data` with numpy dtype `descr`.
pub fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 {
        format!("{},", dims[0])
    } else {
        dims.join(", ")
    };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({shape_text}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// A corpus every sample of which has the same fields, exercising MDS encodings:
/// bytes (empty and large), non-ASCII text, JSON, an integer class, a float, a static
/// ndarray and a dynamic one whose dims cross 255.
pub fn mds_corpus(n: usize) -> Tree {
    let tree = Tree::new();
    for i in 0..n {
        let key = format!("set_{}/s{i:05}", i % 3);
        let bin = match i % 4 {
            0 => Vec::new(),
            1 => noise(i as u64, 1),
            2 => noise(i as u64, 777),
            _ => noise(i as u64, 5000),
        };
        tree.file(&format!("{key}.bin"), bin);
        tree.file(
            &format!("{key}.txt"),
            ["", "héllo wörld 😀 ", "plain text "][i % 3].repeat(i % 4),
        );
        tree.file(
            &format!("{key}.json"),
            format!("{{\"i\": {i}, \"name\": \"ü{i}\"}}"),
        );
        tree.file(&format!("{key}.cls"), format!("{}\n", i % 7));
        tree.file(&format!("{key}.f32"), format!("{}", i as f64 / 3.0));
        let emb: Vec<u8> = (0..3u16)
            .flat_map(|k| (k + i as u16).to_le_bytes())
            .collect();
        tree.file(&format!("{key}.emb.npy"), npy("<u2", &[3], &emb));
        let rows = [1usize, 2, 300][i % 3];
        let arr: Vec<u8> = (0..rows * 2)
            .flat_map(|k| ((k + i) as i32).to_le_bytes())
            .collect();
        tree.file(&format!("{key}.arr.npy"), npy("<i4", &[rows, 2], &arr));
    }
    tree
}

/// `--column` options matching [`mds_corpus`].
pub const MDS_COLUMNS: [&str; 8] = [
    "--column",
    "cls:int",
    "--column",
    "f32:float32",
    "--column",
    "emb.npy:ndarray:uint16:3",
    "--column",
    "arr.npy:ndarray:int32",
];
/// A committed checkpoint fixture (`tests/fixtures/checkpoints/REL`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/checkpoints")
}

/// The bytes of a committed checkpoint fixture.
pub fn checkpoint_fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap()
}

/// A valid safetensors file holding one U8 tensor of `len` pseudo-random bytes.
pub fn safetensors(seed: u64, len: usize) -> Vec<u8> {
    let mut header =
        format!(r#"{{"t":{{"dtype":"U8","shape":[{len}],"data_offsets":[0,{len}]}}}}"#);
    while (8 + header.len()) % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&noise(seed, len));
    out
}

/// Copies a directory tree (regular files and directories).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A committed model_signing fixture (`tests/fixtures/model_signing/REL`).
pub fn signing_fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/model_signing")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// The binary of a test server (or the interpreter of an env), from environment variable
/// `var` (tests/setup.sh sets it); `None` when it is not set and [`missing`] lets the test
/// pass as not run.
pub fn server_bin(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            missing(what, &format!("{var} is not set (tests/setup.sh sets it)"));
            None
        }
    }
}

/// What a test does when something it needs (an env, a server, root, Slurm) is missing:
/// such a test is ignored with its cost (tests/project/costs.rs, tests/README.md), so it runs
/// only when asked for. Under CI that is a failure: a test skipped there would hide a
/// broken set-up. Outside CI, in a run that asked for the ignored tests (`--ignored`,
/// `--include-ignored`: tests/run_all.sh as a user without root), the test says NOT RUN
/// and passes, as before. In a plain run the test was not ignored, so it would pass
/// without running in the quick subset: that is a failure naming the fix.
pub fn missing(what: &str, why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("{what} test under CI without what it needs: {why}");
    }
    let asked = std::env::args().any(|a| a == "--ignored" || a == "--include-ignored");
    assert!(
        asked,
        "{what} test not ignored, without what it needs ({why}): give it an \
         `#[ignore]` that names its cost (tests/project/costs.rs, tests/README.md)"
    );
    eprintln!("{what} test NOT RUN: {why}");
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something listens on 127.0.0.1:`port`, at most `seconds`.
pub fn wait_listening(port: u16, what: &str, seconds: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
