//! Samples left out while writing (content checks run on the bytes as they are packed):
//! no planned shard that loses all its samples is kept, the numbering has no gap, and the
//! output stays identical for any thread count and across a crash and resume.

use super::crash::crashed_run;
use super::*;

/// 60 samples of about 1.1 KiB each; samples 20..=39 have malformed JSON.
pub(crate) fn mislabelled() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..60 {
        std::fs::write(dir.path().join(format!("{i:04}.bin")), vec![i as u8; 600]).unwrap();
        let json = if (20..40).contains(&i) {
            format!("{{\"i\": {i}")
        } else {
            format!("{{\"i\": {i}}}")
        };
        std::fs::write(dir.path().join(format!("{i:04}.json")), json).unwrap();
    }
    dir
}

/// Each sample takes 2,560 bytes in a tar (two 512-byte headers, 600 bytes of data in
/// two blocks, the JSON in one): a 13,824-byte shard holds five samples and the end
/// blocks.
pub(crate) const SHARD: u64 = 1024 + 5 * 2560;

fn shard_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tar"))
        .collect();
    names.sort();
    names
}

#[test]
fn shards_emptied_by_left_out_samples_are_not_kept_and_numbers_close_up() {
    let input = mislabelled();
    let out = tempfile::tempdir().unwrap();
    let report = run(input.path(), out.path(), &settings(SHARD)).unwrap();
    // 12 plans of 5 samples; plans 4..=7 hold only bad samples.
    let names = shard_names(out.path());
    let expected: Vec<String> = (0..8).map(|i| format!("shard-{i:06}.tar")).collect();
    assert_eq!(names, expected, "contiguous numbers, no empty shard");
    let listed: Vec<&str> = report
        .manifest
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(listed, expected);
    let mut keys = Vec::new();
    for name in &names {
        let path = out.path().join(name);
        assert!(std::fs::metadata(&path).unwrap().len() <= SHARD);
        let members = members(&path);
        assert!(!members.is_empty(), "{name} is empty");
        keys.extend(members.into_iter().map(|(n, _)| n));
    }
    let want: Vec<String> = (0..20)
        .chain(40..60)
        .flat_map(|i| [format!("{i:04}.bin"), format!("{i:04}.json")])
        .collect();
    assert_eq!(keys, want, "every good sample, in order");
    assert_eq!(report.manifest.skipped.len(), 40);
    assert!(
        report.manifest.skipped[0]
            .reason
            .contains("left out with `0020.json`"),
        "{:?}",
        report.manifest.skipped[0]
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("4 planned shard(s) would have held only samples")),
        "{:?}",
        report.warnings
    );
    assert_eq!(report.manifest.totals.samples, Some(40));
}

#[test]
fn numbering_is_the_same_for_any_thread_count() {
    let input = mislabelled();
    let mut outs = Vec::new();
    for threads in [1, 2, 5] {
        let out = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| run(input.path(), out.path(), &settings(SHARD)))
            .unwrap();
        outs.push(snapshot(out.path()));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
}

#[test]
fn a_crash_before_during_or_after_the_empty_plans_resumes_identically() {
    let input = mislabelled();
    let clean = tempfile::tempdir().unwrap();
    run(input.path(), clean.path(), &settings(SHARD)).unwrap();
    for crash_after in [0, 3, 4, 5, 7] {
        let out = tempfile::tempdir().unwrap();
        crashed_run(input.path(), out.path(), crash_after, 2, &settings(SHARD));
        let names = shard_names(out.path());
        let expected: Vec<String> = (0..crash_after)
            .map(|i| format!("shard-{i:06}.tar"))
            .collect();
        assert_eq!(names, expected, "only committed shards are visible");
        let resumed = run(input.path(), out.path(), &settings(SHARD)).unwrap();
        assert_eq!(resumed.shards_resumed, crash_after);
        assert_eq!(
            snapshot(out.path()),
            snapshot(clean.path()),
            "crash after {crash_after} shards"
        );
    }
}

#[test]
fn stale_shards_of_an_earlier_attempt_are_removed() {
    let input = mislabelled();
    let clean = tempfile::tempdir().unwrap();
    run(input.path(), clean.path(), &settings(SHARD)).unwrap();
    let out = tempfile::tempdir().unwrap();
    crashed_run(input.path(), out.path(), 6, 1, &settings(SHARD));
    // The user removes a committed shard and an earlier attempt left a higher number.
    std::fs::remove_file(out.path().join("shard-000002.tar")).unwrap();
    std::fs::write(out.path().join("shard-000011.tar"), b"stale").unwrap();
    let resumed = run(input.path(), out.path(), &settings(SHARD)).unwrap();
    assert_eq!(resumed.shards_resumed, 2, "the intact prefix is kept");
    assert_eq!(snapshot(out.path()), snapshot(clean.path()));
}

#[test]
fn a_run_whose_every_sample_is_left_out_leaves_nothing_behind() {
    let input = tree(&[("a.json", b"{"), ("b.json", b"[1,")]);
    let out = tempfile::tempdir().unwrap();
    let err = run(input.path(), out.path(), &settings(8192))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("every sample was left out while writing (2 input file(s)); first: `a.json` is not valid JSON"),
        "{err}"
    );
    assert_eq!(snapshot(out.path()), Vec::new(), "no shard, no state");
}
