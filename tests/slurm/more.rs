//! `tokenize` as a 4-task array with a dependent `merge`: the single run's documents and
//! tokens; and the job files' own case, a bucket-to-bucket `pack` (and `tokenize`) on the
//! S3 server: the single run's bytes.

use std::path::Path;

use super::*;
use crate::s3::S3;
use crate::tasks::{jsonl_corpus, payload};

#[test]
fn a_4_task_array_tokenize_and_a_dependent_merge_give_the_single_runs_tokens() {
    let Some(slurm) = Slurm::start() else { return };
    let input = jsonl_corpus();
    let inp = input.path().to_str().unwrap();
    let t = Tree::new();
    let logs = t.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for format in ["megatron", "llmc"] {
        let common = ["-t", "gpt2", "--format", format, "--shard-tokens", "8k"];
        let (single, split) = (
            t.s(&format!("{format}-single")),
            t.s(&format!("{format}-split")),
        );
        let o = run(&[&["tokenize", inp, &single][..], &common].concat());
        assert!(o.status.success(), "{}", text(&o.stderr));
        let task = job(
            "",
            &[
                &["tokenize", inp, &split][..],
                &common,
                &["--task-index", "auto"],
            ]
            .concat(),
        );
        array_then_merge(&slurm, &task, 4, "", &split, &logs, format);
        let (got, want) = (Path::new(&split), Path::new(&single));
        let tokens = payload(want, format);
        assert!(!tokens.0.is_empty(), "{format}: no tokens");
        assert_eq!(
            payload(got, format),
            tokens,
            "{format}: the tokens in order"
        );
        let (m, whole) = (manifest(got), manifest(want));
        assert_eq!(m["totals"]["documents"], whole["totals"]["documents"]);
        assert_eq!(m["totals"]["tokens"], whole["totals"]["tokens"]);
        assert_eq!(m["options"], whole["options"]);
        let o = run(&["verify", &split]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", text(&o.stdout));
    }
}

#[test]
fn a_4_task_array_packs_bucket_to_bucket_as_one_process_packs_to_disk() {
    let Some(slurm) = Slurm::start() else { return };
    let Some(s3) = S3::start() else { return };
    let input = corpus(300, 6000);
    copy_dir(input.path(), &s3.bucket("raw").join("images"));
    let text_input = jsonl_corpus();
    copy_dir(text_input.path(), &s3.bucket("raw").join("text"));
    let shards = s3.bucket("shards");
    let t = Tree::new();
    let logs = t.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    // The job's environment, as a job file sets it (the secret quoted for bash).
    let pre: String = s3
        .env()
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", q(v)))
        .collect();

    let common = ["--format", "webdataset", "--shard-size", "64KiB"];
    let single = t.s("wds-single");
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &single][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let task = job(
        &pre,
        &[
            &["pack", "s3://raw/images", "s3://shards/wds"][..],
            &common,
            &["--task-index", "auto"],
        ]
        .concat(),
    );
    array_then_merge(&slurm, &task, 4, &pre, "s3://shards/wds", &logs, "wds");
    assert_eq!(
        snapshot(&shards.join("wds")),
        snapshot(&t.join("wds-single")),
        "the bucket holds the single run's bytes, and nothing else"
    );
    let (code, report) = s3.json(&["verify", "s3://shards/wds"]);
    assert_eq!(code, 0, "{report}");

    let common = ["-t", "gpt2", "--format", "megatron", "--shard-tokens", "8k"];
    let single = t.s("tokens-single");
    let o = run(&[
        &["tokenize", text_input.path().to_str().unwrap(), &single][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let task = job(
        &pre,
        &[
            &["tokenize", "s3://raw/text", "s3://shards/tokens"][..],
            &common,
            &["--task-index", "auto"],
        ]
        .concat(),
    );
    array_then_merge(
        &slurm,
        &task,
        4,
        &pre,
        "s3://shards/tokens",
        &logs,
        "tokens",
    );
    let got = shards.join("tokens");
    assert_eq!(
        payload(&got, "megatron"),
        payload(&t.join("tokens-single"), "megatron")
    );
    let names: Vec<String> = snapshot(&got).into_keys().collect();
    assert!(
        names.iter().all(|n| !n.starts_with('.')),
        "nothing left behind: {names:?}"
    );
    let (code, report) = s3.json(&["verify", "s3://shards/tokens"]);
    assert_eq!(code, 0, "{report}");
}
