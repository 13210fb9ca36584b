//! The Kubernetes manifest in samples/jobs runs as written: its Jobs' commands, parsed
//! from the YAML, run in order against the S3 server (the Indexed Job's pods as processes
//! with their JOB_COMPLETION_INDEX, at once), and the bucket ends holding the bytes a
//! single `pack` of the same files writes to disk. (The Slurm files are run by a real
//! Slurm in tests/split/slurm/more.rs.)

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::interop::run_python;
use crate::remote::s3::{S3, local_pack};
use crate::util::*;

/// The manifest's Jobs as `[{name, args, completions, indexed}]`, in file order.
fn jobs() -> Option<Vec<Value>> {
    let yaml = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/jobs/pack-indexed-job.yaml");
    let script = r#"
import json, sys, yaml
out = []
for doc in yaml.safe_load_all(open(sys.argv[1])):
    spec = doc["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    assert container["command"] == ["shardsmith"], container["command"]
    out.append({"name": doc["metadata"]["name"], "args": container["args"],
                "completions": spec.get("completions", 1),
                "indexed": spec.get("completionMode") == "Indexed"})
print(json.dumps(out))
"#;
    let printed = run_python(&["-c", script, yaml.to_str().unwrap()], &[])?;
    Some(serde_json::from_str(&printed).unwrap())
}

fn pod(s3: &S3, args: &[String], index: Option<u64>) -> Child {
    let mut c = Command::new(bin());
    c.args(args)
        .envs(s3.env())
        .env("SHARDSMITH_NO_PROGRESS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(i) = index {
        c.env("JOB_COMPLETION_INDEX", i.to_string());
    }
    c.spawn().unwrap()
}

#[test]
#[ignore = "needs an object store server and the python env: SHARDSMITH_S3S_FS, SHARDSMITH_PYTHON (tests/setup.sh)"]
fn the_kubernetes_jobs_run_as_written_give_the_single_runs_bytes() {
    let Some(s3) = S3::start() else { return };
    let Some(jobs) = jobs() else { return };
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["shardsmith-list", "shardsmith-pack", "shardsmith-merge"]
    );
    let input = corpus(150, 20_000);
    copy_dir(input.path(), &s3.bucket("raw").join("images"));
    s3.bucket("shards");
    for job in &jobs {
        let args: Vec<String> = job["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let pods: Vec<Child> = if job["indexed"] == true {
            (0..job["completions"].as_u64().unwrap())
                .map(|i| pod(&s3, &args, Some(i)))
                .collect()
        } else {
            vec![pod(&s3, &args, None)]
        };
        for (i, p) in pods.into_iter().enumerate() {
            let o = p.wait_with_output().unwrap();
            assert_eq!(
                o.status.code(),
                Some(0),
                "{} pod {i}: {}",
                job["name"],
                text(&o.stderr)
            );
        }
    }
    // The same pack, as one process, to disk: the pack Job's options without the split.
    let pack: Vec<String> = jobs[1]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let format = pack.iter().position(|a| a == "--format").unwrap();
    let size = pack.iter().position(|a| a == "--shard-size").unwrap();
    let want = local_pack(
        input.path(),
        &[
            "--format",
            &pack[format + 1],
            "--shard-size",
            &pack[size + 1],
        ],
    );
    assert_eq!(snapshot(&s3.bucket("shards").join("wds")), want);
    let (code, report) = s3.json(&["verify", "s3://shards/wds"]);
    assert_eq!(code, 0, "{report}");
}

/// samples/jobs/submit.sh where Slurm is not installed: it fails, says so, and prints
/// no job ids (a failed sbatch with a real Slurm is in tests/split/slurm/more.rs).
#[test]
fn submit_sh_fails_when_sbatch_is_missing() {
    let t = Tree::new();
    // A PATH with what the script needs besides sbatch.
    let dirname = Command::new("bash")
        .args(["-c", "command -v dirname"])
        .output()
        .unwrap();
    let dirname = text(&dirname.stdout).trim().to_string();
    std::os::unix::fs::symlink(&dirname, t.join("dirname")).unwrap();
    let submit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/jobs/submit.sh");
    let o = Command::new("/bin/bash")
        .arg(submit)
        .env_clear()
        .env("PATH", t.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr),
        "submit.sh: sbatch not found: run this on a Slurm login node (nothing was submitted)\n"
    );
    assert_eq!(text(&o.stdout), "");
}
