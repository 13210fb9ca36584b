//! The workspace's layering (issue 12): each library depends only on the crates below
//! it, and no crate has an import cycle between its files. Checked by
//! `tests/tools/layers.py`, which is itself tested here on a crate that has a cycle.

use std::path::Path;
use std::process::Command;

fn layers(args: &[&Path]) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    Command::new("python3")
        .arg(root.join("tests/tools/layers.py"))
        .args(args)
        .output()
        .expect("python3 runs")
}

#[test]
fn the_workspace_is_layered_without_import_cycles() {
    let out = layers(&[]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_cycle_between_files_is_found_through_reexports_and_parents() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("fmt")).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod fmt;\nmod plan;\npub use plan::Plan;\n",
    )
    .unwrap();
    // plan.rs uses fmt/mod.rs, which calls its child fmt/def.rs, which uses plan.rs
    // through the crate root's re-export `crate::Plan`.
    std::fs::write(
        src.join("plan.rs"),
        "use crate::fmt::Kind;\npub struct Plan;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("fmt/mod.rs"),
        "mod def;\nmod ok;\npub struct Kind;\nfn f() { def::g(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("fmt/def.rs"), "use crate::Plan;\npub fn g() {}\n").unwrap();
    // A test module may use anything: not a cycle.
    std::fs::write(
        src.join("fmt/ok.rs"),
        "#[cfg(test)]\nmod tests { use crate::plan::Plan; }\n",
    )
    .unwrap();
    let out = layers(&[&src]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("import cycle") && text.contains("fmt/def.rs") && text.contains("plan.rs"),
        "{text}"
    );
    assert!(!text.contains("ok.rs"), "{text}");

    // Break it: the child no longer reaches back up.
    std::fs::write(src.join("fmt/def.rs"), "pub fn g() {}\n").unwrap();
    let out = layers(&[&src]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Inside an inline module `super::` is the file itself (no cycle) ...
    std::fs::write(
        src.join("fmt/def.rs"),
        "mod hex { use super::Local; }\npub struct Local;\npub fn g() {}\n",
    )
    .unwrap();
    let out = layers(&[&src]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // ... and `super::super::` the file's parent (a cycle again).
    std::fs::write(
        src.join("fmt/def.rs"),
        "mod hex { use super::super::Kind; }\npub fn g() {}\n",
    )
    .unwrap();
    let out = layers(&[&src]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("fmt/def.rs") && text.contains("fmt/mod.rs"),
        "{text}"
    );
}
