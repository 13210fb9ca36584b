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
