//! Conversions (WebDataset and MDS datasets as `pack` input) keep `pack`'s promises: the
//! same bytes whatever `--jobs`, shuffled or not, and a killed run that resumes ends
//! byte-identical to an uninterrupted one. Compressed inputs go through scratch copies,
//! which must not outlive the run.

use std::path::Path;

use crate::util::*;

/// A dataset made by `pack` from a generated corpus, in `dir`.
fn dataset(input: &Path, dir: &Path, args: &[&str]) {
    let o = run(&[
        &["pack", input.to_str().unwrap(), dir.to_str().unwrap()],
        args,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
}

fn pack(input: &Path, out: &Path, args: &[&str]) {
    let o = run(&[
        &["pack", input.to_str().unwrap(), out.to_str().unwrap(), "-q"],
        args,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// No scratch file is left in `dir` (they are hidden, `.shardsmith-scratch-…`).
fn no_scratch(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".shardsmith-scratch-"))
        .collect();
    assert!(
        left.is_empty(),
        "scratch files left in {}: {left:?}",
        dir.display()
    );
}

#[test]
fn conversions_are_the_same_bytes_for_any_jobs_and_shuffled() {
    let input = corpus(300, 6_000);
    let t = Tree::new();
    let inputs = [
        ("wds", vec!["--shard-size", "64KiB"]),
        (
            "wds-gz",
            vec!["--shard-size", "64KiB", "--compression", "gz"],
        ),
        (
            "mds-zstd",
            vec![
                "--format",
                "mds",
                "--shard-size",
                "64KiB",
                "--compression",
                "zstd",
            ],
        ),
    ];
    for (name, made_with) in &inputs {
        let from = t.join(name);
        dataset(input.path(), &from, made_with);
        for format in ["webdataset", "mds", "parquet"] {
            for shuffle in [&[][..], &["--shuffle", "--seed", "7"][..]] {
                let mut args = vec!["--format", format, "--shard-size", "48KiB"];
                args.extend(shuffle);
                let label = format!("{name} -> {format} {shuffle:?}");
                let one = t.join(&format!("{name}-{format}-{}-j1", shuffle.len()));
                pack(&from, &one, &[&args[..], &["-j", "1"]].concat());
                let two = t.join(&format!("{name}-{format}-{}-j2", shuffle.len()));
                pack(&from, &two, &[&args[..], &["-j", "2"]].concat());
                let a = snapshot(&one);
                assert!(a.len() > 4, "{label}: {:?}", a.keys());
                assert!(a == snapshot(&two), "{label}: -j 1 and -j 2 differ");
                no_scratch(&one);
            }
        }
    }
}

#[test]
fn a_killed_conversion_resumes_byte_identical() {
    let input = corpus(1500, 20_000);
    let t = Tree::new();
    let from = t.join("wds-gz");
    dataset(
        input.path(),
        &from,
        &["--shard-size", "1MiB", "--compression", "gz"],
    );
    let args = |out: &Path| -> Vec<String> {
        [
            "pack",
            from.to_str().unwrap(),
            out.to_str().unwrap(),
            "--format",
            "webdataset",
            "--shard-size",
            "32KiB",
            "--shuffle",
            "-j",
            "2",
        ]
        .map(String::from)
        .to_vec()
    };
    let reference = t.join("reference");
    let o = run(&args(&reference)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let expected = snapshot(&reference);
    assert!(expected.len() > 40, "{} files", expected.len());
    let mut kills = 0;
    for (round, shards) in [1usize, 10, 30].into_iter().enumerate() {
        let target = t.join(&format!("killed{round}"));
        let a = args(&target);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        if run_and_kill(&a, &target, ".tar", shards) {
            kills += 1;
            assert!(!target.join("manifest.json").exists());
        }
        let o = run(&a);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            snapshot(&target) == expected,
            "round {round}: differs from an uninterrupted run"
        );
        no_scratch(&target);
    }
    assert!(kills > 0, "no run was killed before it finished");
}
