//! `pack` and `tokenize` split into the tasks of a real Slurm array, on a one-node
//! cluster started per test (tests/servers/slurm.sh: slurmctld + slurmd on 127.0.0.1,
//! munge), finished by a `merge` job that depends on the array: the single run's bytes
//! (`array.rs`), its tokens (`more.rs`), on disk and bucket to bucket on the S3 server
//! (`more.rs`). A cancelled task resubmitted alone (`sbatch --array=2`) completes the run
//! and changes nothing else. Needs root (the script installs slurm-wlm with apt-get when
//! missing), so the tests are ignored unless asked for (tests/README.md); asked for
//! without it they are not run, except under CI, where that is a failure.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::util::*;

mod array;
mod more;

/// One cluster at a time in this test process (each uses free ports of its own).
static CLUSTER: Mutex<()> = Mutex::new(());

/// A running one-node Slurm cluster; stopped (its jobs cancelled) on drop.
pub struct Slurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
    _one: MutexGuard<'static, ()>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/servers/slurm.sh")
}

fn failed(o: &Output) -> String {
    let (err, out) = (text(&o.stderr), text(&o.stdout));
    [err.trim(), out.trim()].join(" ").trim().to_string()
}

impl Slurm {
    /// Installs and starts the cluster, or `None` (test not run, with a note) when that is
    /// not possible and [`missing`] lets the test pass (under CI it is a failure).
    pub fn start() -> Option<Self> {
        let one = CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
        let skip = |why: String| -> Option<Self> {
            missing("Slurm", &why);
            None
        };
        let o = Command::new(script()).arg("install").output().unwrap();
        if !o.status.success() {
            return skip(format!("slurm.sh install: {}", failed(&o)));
        }
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new(script())
            .arg("start")
            .arg(dir.path())
            .output()
            .unwrap();
        let out = text(&o.stdout);
        let conf = out.lines().find_map(|l| l.strip_prefix("SLURM_CONF="));
        match conf {
            Some(conf) if o.status.success() => Some(Self {
                conf: PathBuf::from(conf),
                dir,
                _one: one,
            }),
            _ => {
                let _ = Command::new(script()).arg("stop").arg(dir.path()).output();
                skip(format!("slurm.sh start: {}", failed(&o)))
            }
        }
    }

    /// A Slurm client command talking to this cluster.
    fn client(&self, name: &str) -> Command {
        let mut c = Command::new(name);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn ok(&self, c: &mut Command) -> String {
        let o = c.output().unwrap();
        assert!(o.status.success(), "{c:?}: {}\n{}", failed(&o), self.log());
        text(&o.stdout)
    }

    /// The end of slurmctld's and slurmd's logs, for failure messages.
    fn log(&self) -> String {
        ["slurmctld", "slurmd"]
            .iter()
            .map(|d| {
                let all = std::fs::read_to_string(self.dir.path().join(format!("log/{d}.log")))
                    .unwrap_or_default();
                let lines: Vec<&str> = all.lines().collect();
                format!(
                    "--- {d}.log\n{}",
                    lines[lines.len().saturating_sub(15)..].join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Submits the batch script `script` (given on stdin) with `extra_args`; returns the
    /// job id (of an array: the array's).
    pub fn sbatch(&self, script: &str, extra_args: &[&str]) -> String {
        let mut child = self
            .client("sbatch")
            .arg("--parsable")
            .args(extra_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "sbatch {extra_args:?}: {}", failed(&o));
        // `--parsable` prints `ID` or `ID;CLUSTER`.
        let id = text(&o.stdout)
            .trim()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        assert!(id.parse::<u64>().is_ok(), "sbatch printed {id:?}");
        id
    }

    /// The jobs (or array tasks, `ID_I`) of `jobs` in the queue: `(id, state, reason)`.
    pub fn queue(&self, jobs: &[&str]) -> Vec<(String, String, String)> {
        let out =
            self.ok(self
                .client("squeue")
                .args(["-h", "-o", "%i %T %r", "-j", &jobs.join(",")]));
        out.lines()
            .map(|l| {
                let mut w = l.split_whitespace().map(str::to_string);
                let mut next = || w.next().unwrap_or_default();
                (next(), next(), next())
            })
            .collect()
    }

    /// Waits until none of `jobs` is pending or running (a job whose dependency failed
    /// counts as done), then returns the state of each job and array task (`ID` or
    /// `ARRAY_I` → `COMPLETED`, `FAILED`, `CANCELLED`, `PENDING (DependencyNeverSatisfied)`).
    pub fn wait(&self, jobs: &[&str], timeout: Duration) -> BTreeMap<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let q = self.queue(jobs);
            if q.iter().all(|(_, _, r)| r == "DependencyNeverSatisfied") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "jobs still queued after {timeout:?}: {q:?}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let mut states = BTreeMap::new();
        for job in jobs {
            let base = job.split('_').next().unwrap();
            for line in self
                .ok(self.client("scontrol").args(["show", "job", "-o", base]))
                .lines()
            {
                let field = |name: &str| {
                    line.split_whitespace()
                        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                        .map(str::to_string)
                };
                let id = match (field("ArrayJobId"), field("ArrayTaskId")) {
                    (Some(a), Some(i)) => format!("{a}_{i}"),
                    _ => field("JobId").unwrap(),
                };
                if *job != base && id != *job {
                    continue;
                }
                let mut state = field("JobState").unwrap();
                if field("Reason").as_deref() == Some("DependencyNeverSatisfied") {
                    state += " (DependencyNeverSatisfied)";
                }
                states.insert(id, state);
            }
        }
        states
    }

    /// Cancels a job or one array task (`ID_I`).
    pub fn scancel(&self, job: &str) {
        self.ok(self.client("scancel").arg(job));
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

/// `s` quoted for bash.
fn q(s: impl AsRef<std::ffi::OsStr>) -> String {
    format!("'{}'", s.as_ref().to_string_lossy().replace('\'', r"'\''"))
}

/// A job script running `shardsmith ARGS` after the shell lines `pre`.
fn job(pre: &str, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(q).collect();
    format!(
        "#!/bin/bash\nset -e\nexport SHARDSMITH_NO_PROGRESS=1\n{pre}\n{} {}\n",
        q(bin()),
        args.join(" ")
    )
}

/// What `sbatch --output=DIR/NAME` jobs wrote, for failure messages.
fn outputs(dir: &Path) -> String {
    snapshot(dir)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".out"))
        .map(|(name, bytes)| format!("--- {name}\n{}", text(&bytes)))
        .collect()
}

/// Every path under `dir`, directories included (a state directory left behind shows).
fn paths(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        out.push(
            path.strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
        if path.is_dir() {
            paths(&path, root, out);
        }
    }
}

fn assert_same(split: &Path, single: &Path, what: &str) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    paths(split, split, &mut a);
    paths(single, single, &mut b);
    a.sort();
    b.sort();
    assert_eq!(a, b, "{what}: the files and directories");
    let (a, b) = (snapshot(split), snapshot(single));
    let differ: Vec<&String> = a.keys().filter(|k| a.get(*k) != b.get(*k)).collect();
    assert!(differ.is_empty(), "{what}: the bytes of {differ:?} differ");
}

fn states(pairs: &[(String, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), (*v).to_string()))
        .collect()
}

/// How long a test waits for its jobs.
const LIMIT: Duration = Duration::from_secs(300);

/// Submits `task` (a job script) as the array `0-(count-1)` and `merge OUTPUT` (after the
/// shell lines `pre`) as a job that depends on it; waits for both and checks that every
/// array task and the merge completed, and that each task printed where its index came
/// from. Job output goes to `logs/NAME-task-I.out` and `logs/NAME-merge.out`.
fn array_then_merge(
    slurm: &Slurm,
    task: &str,
    count: u32,
    pre: &str,
    output: &str,
    logs: &Path,
    name: &str,
) {
    let array = slurm.sbatch(
        task,
        &[
            &format!("--array=0-{}", count - 1),
            &format!("--output={}/{name}-task-%a.out", logs.display()),
        ],
    );
    let merge = slurm.sbatch(
        &job(pre, &["merge", output]),
        &[
            &format!("--dependency=afterok:{array}"),
            &format!("--output={}/{name}-merge.out", logs.display()),
        ],
    );
    let got = slurm.wait(&[&array, &merge], LIMIT);
    let mut want: Vec<(String, &str)> = (0..count)
        .map(|i| (format!("{array}_{i}"), "COMPLETED"))
        .collect();
    want.push((merge.clone(), "COMPLETED"));
    assert_eq!(got, states(&want), "{name}\n{}", outputs(logs));
    for i in 0..count {
        let out = std::fs::read_to_string(logs.join(format!("{name}-task-{i}.out"))).unwrap();
        assert!(
            out.contains(&format!(
                "task {i} of {count} (from SLURM_ARRAY_TASK_ID={i}, SLURM_ARRAY_TASK_COUNT={count})"
            )),
            "{name} task {i}: {out}"
        );
    }
    let out = std::fs::read_to_string(logs.join(format!("{name}-merge.out"))).unwrap();
    assert!(
        out.contains(&format!("finished the run of {count} task(s)")),
        "{name}: {out}"
    );
}
