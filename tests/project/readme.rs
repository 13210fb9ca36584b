//! Every example of the README and of every page it links to runs as written (issue 30:
//! the reference moved out of the README into pages beside the code). Each page's
//! ```console blocks' `$ ` lines are run in order, in a fresh temporary copy of `samples/`
//! of its own (as a reader following that page from the top would; a page's blocks make
//! what they use), with the `shardsmith` under test first on PATH, and what they print
//! (stdout and stderr, as a terminal shows them) must be what the page shows, up to
//! timings, throughput and a freshly generated key's id. Each ```sh block runs too and
//! must exit 0, except the ones that build the project or run its suites (`cargo …`,
//! `tests/…`, `.ci/…`), which the suite itself covers, and the `pip install` lines:
//! tests/wheels.sh installs freshly built wheels into a fresh venv as they do, and runs
//! the ```python examples that import shardsmith there. `cargo run --release --` is run
//! as the installed `shardsmith`. A failure names the page and the line.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::project::doc_links::{links, resolve, root};
use crate::util::{bin, copy_dir, text};

/// The pages whose examples run: the README and every page it links to (checked by
/// `the_pages_are_the_readme_and_what_it_links_to`).
const PAGES: &[&str] = &[
    "README.md",
    "cli/README.md",
    "cli/python/README.md",
    "formats/checkpoint/README.md",
    "formats/image/README.md",
    "formats/pack/README.md",
    "formats/shard/README.md",
    "formats/store/README.md",
    "formats/tokens/README.md",
    "manifest/README.md",
    "samples/README.md",
    "tests/README.md",
    "tests/bench/README.md",
];

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

/// Runs the examples of `page` in `work` (a fresh copy of `samples/` in it): how many
/// commands ran, and a message for each that failed.
fn run_page(page: &str, work: &Path, path: &str) -> (usize, Vec<String>) {
    let doc = std::fs::read_to_string(root().join(page)).unwrap();
    let mut ran = 0;
    let mut failures = Vec::new();
    for block in blocks(&doc) {
        if !block.console {
            for line in &block.lines {
                let command = line.split('#').next().unwrap().trim();
                // `pip install …` lines are run by tests/wheels.sh, which builds the
                // wheels and installs them into a fresh venv; `tests/…` and `.ci/…`
                // are the suites and the release build.
                if command.is_empty()
                    || command.starts_with("tests/")
                    || command.starts_with(".ci/")
                    || command.starts_with("pip ")
                {
                    continue;
                }
                let command = command.replace("cargo run --release -- ", "shardsmith ");
                if !command.starts_with("shardsmith ") {
                    assert!(
                        command.starts_with("cargo "),
                        "{page} line {}: unknown sh command `{command}`",
                        block.line
                    );
                    continue;
                }
                let (code, output) = shell(work, path, &command);
                ran += 1;
                if code != Some(0) {
                    failures.push(format!(
                        "{page} line {}: `{command}` exited {code:?}:\n{output}",
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
                    "{page} line {}: output without a command",
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
            let (_, output) = shell(work, path, command);
            ran += 1;
            let got: Vec<String> = output.lines().map(normalize).collect();
            if got != expected {
                failures.push(format!(
                    "{page} line {at}: `{command}`\n--- {page} shows\n{}\n--- it prints\n{}",
                    expected.join("\n"),
                    output.trim_end()
                ));
            }
        }
    }
    (ran, failures)
}

#[test]
fn every_example_of_every_page_runs_as_written() {
    let root = root();
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Each page in its own copy of samples/, the pages at once.
    let results: Vec<(&str, usize, Vec<String>)> = std::thread::scope(|s| {
        let runs: Vec<_> = PAGES
            .iter()
            .map(|&page| {
                let (root, path) = (&root, &path);
                s.spawn(move || {
                    let work = tempfile::tempdir().unwrap();
                    copy_dir(&root.join("samples"), &work.path().join("samples"));
                    let (ran, failures) = run_page(page, work.path(), path);
                    (page, ran, failures)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for (page, ran, page_failures) in results {
        // The README's tour and the reference pages with examples must have them.
        if page == "README.md" || page == "cli/README.md" {
            assert!(ran >= 10, "only {ran} commands found in {page}");
        }
        failures.extend(page_failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_pages_are_the_readme_and_what_it_links_to() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut linked: BTreeSet<String> = links(&readme)
        .into_iter()
        .filter(|(_, target)| !target.contains("://"))
        .filter_map(|(_, target)| {
            let path = target.split('#').next().unwrap().to_string();
            path.ends_with(".md")
                .then(|| resolve("README.md", &path))
                .flatten()
        })
        .collect();
    linked.insert("README.md".to_string());
    let listed: BTreeSet<String> = PAGES.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        listed, linked,
        "PAGES must list the README and every page it links to, so their examples run"
    );
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
