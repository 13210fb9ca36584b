//! `tokenize` as a 4-task array with a dependent `merge`: the single run's documents and
//! tokens; and the job files' own case, a bucket-to-bucket `pack` on the S3 server
//! submitted by samples/jobs/submit.sh as written (list, array, merge): the single run's
//! bytes; and a bucket-to-bucket `tokenize`.

use std::path::Path;

use super::*;
use crate::remote::s3::S3;
use crate::split::tasks::{jsonl_corpus, payload};

#[test]
#[ignore = "needs root and Slurm: tests/servers/slurm.sh starts a one-node cluster"]
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
#[ignore = "needs root and Slurm and an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn the_job_files_pack_bucket_to_bucket_as_one_process_packs_to_disk() {
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

    // The job files as written (samples/jobs/submit.sh: list, array, merge), sized for
    // the test node, with the binary on PATH and the S3 variables in the environment.
    let common = ["--format", "webdataset", "--shard-size", "64KiB"];
    let single = t.s("wds-single");
    let o = run(&[
        &["pack", input.path().to_str().unwrap(), &single][..],
        &common,
    ]
    .concat());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let submit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/jobs/submit.sh");
    let o = slurm
        .client("bash")
        .arg(&submit)
        .args(["--cpus-per-task=1", "--mem=200M"])
        .current_dir(&logs)
        .envs(s3.env())
        .env("PATH", &path)
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .env("INPUT", "s3://raw/images")
        .env("OUTPUT", "s3://shards/wds")
        .env("TASKS", "4")
        .env("SHARD_SIZE", "64KiB")
        .output()
        .unwrap();
    assert!(o.status.success(), "submit.sh: {}", failed(&o));
    let out = text(&o.stdout);
    // A submission Slurm refuses fails the script, saying nothing was submitted.
    let bad = slurm
        .client("bash")
        .arg(&submit)
        .arg("--partition=nosuch")
        .current_dir(&logs)
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1), "submit.sh: {}", failed(&bad));
    assert!(
        text(&bad.stderr)
            .ends_with("submit.sh: sbatch failed (see its message above); nothing was submitted\n"),
        "{}",
        failed(&bad)
    );
    assert!(!text(&bad.stdout).contains("jobs "), "{}", failed(&bad));
    let ids: Vec<String> = out
        .lines()
        .find_map(|l| l.strip_prefix("jobs "))
        .unwrap_or_else(|| panic!("no job ids: {out}"))
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let [list, array, merge] = &ids[..] else {
        panic!("three job ids: {out}")
    };
    let got = slurm.wait(&[list, array, merge], LIMIT);
    let mut want: Vec<(String, &str)> =
        vec![(list.clone(), "COMPLETED"), (merge.clone(), "COMPLETED")];
    want.extend((0..4).map(|i| (format!("{array}_{i}"), "COMPLETED")));
    assert_eq!(got, states(&want), "{}", outputs(&logs));
    assert_eq!(
        snapshot(&shards.join("wds")),
        snapshot(&t.join("wds-single")),
        "the bucket holds the single run's bytes, and nothing else"
    );
    assert!(
        shards.join("wds-files.tsv").is_file(),
        "the list the tasks shared is beside the output"
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
