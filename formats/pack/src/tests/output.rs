//! The shards a run writes: every input byte within the size limit, and the same bytes
//! for any thread count.

use super::*;

#[test]
fn shards_hold_every_input_byte_within_the_size_limit() {
    let input = corpus(30);
    let out = tempfile::tempdir().unwrap();
    let report = run(input.path(), out.path(), &settings(8192)).unwrap();
    let m = &report.manifest;
    assert!(m.files.len() > 3);
    let mut seen = Vec::new();
    for entry in &m.files {
        let path = out.path().join(&entry.path);
        assert!(entry.size <= 8192 || entry.samples == Some(1), "{entry:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), entry.size);
        assert_eq!(sha256_hex(&std::fs::read(&path).unwrap()), entry.sha256);
        let names = members(&path);
        assert_eq!(
            names.first().unwrap().0.split('.').next(),
            entry.first_key.as_deref()
        );
        seen.extend(names);
    }
    assert_eq!(seen.len(), 60);
    for (name, data) in seen {
        assert_eq!(
            std::fs::read(input.path().join(&name)).unwrap(),
            data,
            "{name}"
        );
    }
    assert_eq!(m.totals.samples, Some(30));
    let sums = std::fs::read_to_string(out.path().join(SUMS_FILE)).unwrap();
    assert_eq!(sums.lines().count(), m.files.len());
    assert!(!out.path().join(state::STATE_DIR).exists());
}

#[test]
fn output_is_identical_for_any_thread_count_and_shuffle_is_seeded() {
    let input = corpus(40);
    let mut outs = Vec::new();
    for threads in [1, 2, 5] {
        let out = tempfile::tempdir().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let s = settings(10_000).with(|s| s.shuffle_seed = Some(9));
        pool.install(|| run(input.path(), out.path(), &s)).unwrap();
        outs.push(snapshot(out.path()));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(outs[0], outs[2]);
    let unshuffled = tempfile::tempdir().unwrap();
    run(input.path(), unshuffled.path(), &settings(10_000)).unwrap();
    assert_ne!(snapshot(unshuffled.path()), outs[0]);
}
