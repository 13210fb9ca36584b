//! Input trees that break naive walkers: symlink loops, and one directory of a million
//! entries (walked, packed and verified with its peak memory measured and bounded).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rayon::prelude::*;

use crate::runs::faults::Tmpfs;
use crate::util::*;

#[test]
fn symlink_loops_are_left_out_with_the_reason() {
    let t = Tree::new();
    t.file("in/a.txt", "a").file("in/sub/b.txt", "b");
    let link = |target: &str, at: &str| std::os::unix::fs::symlink(target, t.join(at)).unwrap();
    link(".", "in/sub/self");
    link("..", "in/sub/up");
    link("x.txt", "in/y.txt");
    link("y.txt", "in/x.txt");
    let (code, report) = run_json(&["pack", &t.s("in"), &t.s("out")]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["samples"], 2);
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["path"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    for (path, reason) in &skipped {
        let want = if path.starts_with("sub/") {
            "symlink to a directory (not followed)"
        } else {
            "broken symlink: Too many levels of symbolic links (os error 40)"
        };
        assert_eq!(reason, want, "{path}");
    }
    for command in ["manifest", "verify"] {
        let o =
            run(&[command, &t.s("in"), "--allow-empty"][..if command == "verify" { 3 } else { 2 }]);
        assert!(o.status.code().is_some(), "{command} ends");
        assert_ne!(o.status.code(), Some(2), "{command}: {}", text(&o.stderr));
    }
}

/// Peak resident memory of a running process, read from /proc until it ends (VmHWM only
/// grows, so the last reading is the peak up to then).
fn run_measured(args: &[&str]) -> (std::process::Output, u64) {
    let mut child = Command::new(bin())
        .args(args)
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = std::fs::read_to_string(&status)
            && let Some(line) = text.lines().find(|l| l.starts_with("VmHWM:"))
        {
            let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
            peak_kib = peak_kib.max(kib);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (child.wait_with_output().unwrap(), peak_kib)
}

#[test]
#[ignore = "needs root: it mounts a tmpfs"]
fn a_directory_of_a_million_entries_packs_and_verifies_in_bounded_memory() {
    // Empty files: a million pages of 4 KiB would not be small.
    let Some(fs) = Tmpfs::mount("3g") else { return };
    let dir = fs.path.join("in/flat");
    std::fs::create_dir_all(&dir).unwrap();
    const N: usize = 1_000_000;
    (0..N).into_par_iter().for_each(|i| {
        std::fs::File::create(dir.join(format!("{i:07}.txt"))).unwrap();
    });
    let out = fs.s("out");
    let (o, pack_kib) =
        run_measured(&["pack", &fs.s("in"), &out, "--shard-size", "1GiB", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["samples"], N);
    let (v, verify_kib) = run_measured(&["verify", &out]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
    assert!(text(&v.stdout).contains(&format!("{N} samples")));
    eprintln!(
        "a million-entry directory: pack peak RSS {} MiB, verify {} MiB",
        pack_kib / 1024,
        verify_kib / 1024
    );
    // About 100 bytes per listed file plus the fixed cost; far from one copy of the data.
    assert!(pack_kib < 512 * 1024, "pack peak RSS {pack_kib} KiB");
    assert!(verify_kib < 256 * 1024, "verify peak RSS {verify_kib} KiB");
    assert!(Path::new(&out).join("manifest.json").exists());
}
