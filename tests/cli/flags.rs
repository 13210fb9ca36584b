//! Help, version and global flags.

use crate::util::*;

#[test]
fn help_explains_every_command_with_examples() {
    let top = run(&["--help"]);
    assert!(top.status.success());
    let top = text(&top.stdout);
    for needle in ["pack", "manifest", "verify", "Exit codes: 0", "--jobs"] {
        assert!(top.contains(needle), "{needle}");
    }
    for (command, needles) in [
        (
            "pack",
            vec![
                "--shard-size",
                "--max-samples",
                "--shuffle",
                "--seed",
                "--strict",
                "--force",
                "--files-from",
                "Example:",
                "Symlinks",
            ],
        ),
        ("verify", vec!["--expect-root", "--manifest", "Example:"]),
        ("manifest", vec!["--output", "Example:"]),
    ] {
        let o = run(&[command, "--help"]);
        assert!(o.status.success());
        let help = text(&o.stdout);
        for needle in needles {
            assert!(help.contains(needle), "{command} --help lacks {needle}");
        }
    }
    let version = run(&["--version"]);
    assert!(text(&version.stdout).starts_with("shardsmith "));
    let bad = run(&["frobnicate"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn json_goes_to_stdout_and_nothing_else_does() {
    let out = Tree::new();
    let o = run(&["pack", samples().to_str().unwrap(), &out.s("s"), "--json"]);
    assert!(o.status.success());
    let value: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is exactly one JSON document");
    assert_eq!(value["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(value["command"], "pack");
    let o = run(&["verify", &out.s("s"), "--json", "-j", "1"]);
    let value: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(value["ok"], true);
    assert_eq!(
        run(&["verify", &out.s("s"), "-j", "0"]).status.code(),
        Some(2)
    );
}

/// The flags `--help` lists under each heading (`Options:`, `Images (…):`, …).
fn sections(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            out.push((line.trim_end_matches(':').to_string(), Vec::new()));
        } else if let Some((_, flags)) = out.last_mut() {
            let item = line.trim_start();
            // `  -j, --jobs <N>` or `      --force`: the long flag of an item line.
            if line.starts_with("  ")
                && item.starts_with('-')
                && let Some(long) = item
                    .split([' ', ','])
                    .find(|w| w.starts_with("--") && w.len() > 2)
            {
                flags.push(long.to_string());
            }
        }
    }
    out
}

#[test]
fn help_headings_hold_only_their_own_flags() {
    let pack = text(&run(&["pack", "--help"]).stdout);
    let sections = sections(&pack);
    let under = |flag: &str| {
        sections
            .iter()
            .find(|(_, flags)| flags.iter().any(|f| f == flag))
            .map(|(heading, _)| heading.as_str())
            .unwrap_or_else(|| panic!("pack --help lists no {flag}:\n{pack}"))
    };
    for flag in [
        "--format",
        "--shard-size",
        "--scratch-dir",
        "--shuffle",
        "--seed",
        "--validate",
        "--strict",
        "--force",
    ] {
        assert_eq!(under(flag), "Options", "{flag}");
    }
    for flag in ["--image-size", "--resize-mode", "--image-format"] {
        assert!(under(flag).starts_with("Images ("), "{flag}");
    }
    for flag in ["--task-index", "--task-count"] {
        assert_eq!(
            under(flag),
            "Split runs (Slurm arrays, Kubernetes Indexed Jobs)",
            "{flag}"
        );
    }
    assert_eq!(under("--jobs"), "Global options");
    let tokenize = text(&run(&["tokenize", "--help"]).stdout);
    assert!(
        tokenize.contains("\nSplit runs (Slurm arrays, Kubernetes Indexed Jobs):\n"),
        "{tokenize}"
    );
    let top = text(&run(&["--help"]).stdout);
    assert!(
        top.contains(
            " Pack raw files into shards, or convert WebDataset, MDS and Parquet, with a manifest\n"
        ),
        "{top}"
    );
}
