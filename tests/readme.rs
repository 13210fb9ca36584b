//! Every example in the README runs as written: each ```console block's `$ ` lines are
//! run in order, in one fresh temporary copy of `samples/` (as a reader following the
//! README from the top would), with the `shardsmith` under test first on PATH, and what
//! they print (stdout and stderr, as a terminal shows them) must be what the README
//! shows, up to timings, throughput and a freshly generated key's id. Each ```sh block
//! runs too and must exit 0, except the ones that build the project or run its suites
//! (`cargo …`, `tests/…`), which the suite itself covers, and the `pip install` lines:
//! tests/wheels.sh installs freshly built wheels into a fresh venv as they do, and runs
//! the ```python examples there. `cargo run --release --` is run as the installed
//! `shardsmith`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{bin, copy_dir, text};

struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    console: bool,
    lines: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in readme.lines().enumerate() {
        match open.take() {
            None => {
                let console = line == "```console";
                if console || line == "```sh" {
                    open = Some(Block {
                        line: i + 1,
                        console,
                        lines: Vec::new(),
                    });
                }
            }
            Some(mut block) => {
                if line == "```" {
                    out.push(block);
                } else {
                    block.lines.push(line.to_string());
                    open = Some(block);
                }
            }
        }
    }
    out
}

/// Replaces what differs from run to run: elapsed times, throughput, a new key's id.
fn normalize(line: &str) -> String {
    let mut out = String::new();
    let words: Vec<&str> = line.trim_end().split(' ').collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let next = words.get(i + 1).copied().unwrap_or("");
        if i > 0
            && words[i - 1] == "in"
            && (next == "s" || next.starts_with("s "))
            && w.parse::<f64>().is_ok()
        {
            out.push_str("<T>");
        } else if w.starts_with('(') && (next.ends_with("B/s)") || next.ends_with("B/s,")) {
            // "(12.4 MB/s)" or "(36.4 MB/s, 15.89 M tokens/s)"
            out.push_str("(<rate>)");
            i += 1;
            while i < words.len() && !words[i].ends_with(')') {
                i += 1;
            }
        } else if i > 0
            && words[i - 1] == "key"
            && w.len() >= 19
            && w[..16].bytes().all(|b| b.is_ascii_hexdigit())
            && w[16..].starts_with("...")
        {
            // A key made by `openssl ecparam` in the example: new at every run.
            out.push_str("<key>");
            out.push_str(&w[16..]);
        } else {
            out.push_str(w);
        }
        out.push(' ');
        i += 1;
    }
    out.trim_end().to_string()
}

fn shell(dir: &Path, path: &str, command: &str) -> (Option<i32>, String) {
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("{{ {command}\n}} 2>&1"))
        .current_dir(dir)
        .env("PATH", path)
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("sh runs");
    (o.status.code(), text(&o.stdout))
}

#[test]
fn every_readme_example_runs_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let work = tempfile::tempdir().unwrap();
    copy_dir(&root.join("samples"), &work.path().join("samples"));
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    let mut failures = Vec::new();
    for block in blocks(&readme) {
        if !block.console {
            for line in &block.lines {
                let command = line.split('#').next().unwrap().trim();
                // `pip install shardsmith…` lines are run by tests/wheels.sh, which
                // builds the wheels and installs them into a fresh venv.
                if command.is_empty()
                    || command.starts_with("tests/")
                    || command.starts_with("pip ")
                {
                    continue;
                }
                let command = command.replace("cargo run --release -- ", "shardsmith ");
                if !command.starts_with("shardsmith ") {
                    assert!(
                        command.starts_with("cargo "),
                        "README line {}: unknown sh command `{command}`",
                        block.line
                    );
                    continue;
                }
                let (code, output) = shell(work.path(), &path, &command);
                ran += 1;
                if code != Some(0) {
                    failures.push(format!(
                        "README line {}: `{command}` exited {code:?}:\n{output}",
                        block.line
                    ));
                }
            }
            continue;
        }
        let mut i = 0;
        while i < block.lines.len() {
            let Some(command) = block.lines[i].strip_prefix("$ ") else {
                failures.push(format!(
                    "README line {}: output without a command",
                    block.line + 1 + i
                ));
                i += 1;
                continue;
            };
            let at = block.line + 1 + i;
            i += 1;
            let mut expected = Vec::new();
            while i < block.lines.len() && !block.lines[i].starts_with("$ ") {
                expected.push(normalize(&block.lines[i]));
                i += 1;
            }
            let (_, output) = shell(work.path(), &path, command);
            ran += 1;
            let got: Vec<String> = output.lines().map(normalize).collect();
            if got != expected {
                failures.push(format!(
                    "README line {at}: `{command}`\n--- README shows\n{}\n--- it prints\n{}",
                    expected.join("\n"),
                    output.trim_end()
                ));
            }
        }
    }
    assert!(ran >= 10, "only {ran} README commands found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn normalizing_keeps_what_must_match() {
    assert_eq!(
        normalize("packed 32 samples (82 files, 34.4 kB) into 2 shards in 0.01 s (6.0 MB/s)"),
        "packed 32 samples (82 files, 34.4 kB) into 2 shards in <T> s (<rate>)"
    );
    assert_eq!(
        normalize("tokenized 3 documents in 1.51 s (36.4 MB/s, 15.89 M tokens/s)"),
        "tokenized 3 documents in <T> s (<rate>)"
    );
    assert_eq!(
        normalize("signed ckpt with the P-256 key 83ab9ad01cd01796... in 0.01 s"),
        "signed ckpt with the P-256 key <key>... in <T> s"
    );
    assert_eq!(
        normalize("  signature  valid, by the P-256 key df445ccea1fb6141...; it covers 5 file(s)"),
        "  signature  valid, by the P-256 key <key>...; it covers 5 file(s)"
    );
    // Digests, counts and sizes stay as they are.
    assert_eq!(normalize("  root      46841ae6"), "  root      46841ae6");
    assert_ne!(
        normalize("packed 31 samples"),
        normalize("packed 32 samples")
    );
}
