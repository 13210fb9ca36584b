//! Which task of a split `pack` or `tokenize` run this process is: `--task-index/--task-count`, or
//! with `--task-index auto` the variables a cluster engine sets. Reading them is opt-in,
//! so that a `pack` run inside an array job for some other reason never splits itself.

use crate::output::refuse;
use anyhow::{Context, Result};
use shardsmith_pack::TaskId;

/// The task, from the flags and (for `auto`) the environment `env`.
///
/// `SLURM_ARRAY_TASK_ID` is looked for first, then `JOB_COMPLETION_INDEX`, then
/// `SLURM_PROCID` (set in every Slurm job step, so the most general).
pub fn resolve(
    index: Option<&str>,
    count: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<TaskId>> {
    let Some(index) = index else {
        return Ok(None);
    };
    if index != "auto" {
        let n: u32 = index
            .parse()
            .with_context(|| format!("--task-index `{index}`: expected a number or `auto`"))?;
        let Some(count) = count else {
            refuse!(
                Task,
                "--task-index {n} needs --task-count N: the number of tasks the run is split into"
            );
        };
        return Ok(Some(TaskId {
            index: n,
            count,
            source: format!("--task-index {n} --task-count {count}"),
        }));
    }
    let engine = Engine { env, count };
    let (index, (count, source)) = if let Some(id) = engine.number("SLURM_ARRAY_TASK_ID")? {
        (id, engine.slurm_array(id)?)
    } else if let Some(i) = engine.number("JOB_COMPLETION_INDEX")? {
        let found = engine.number("SHARDSMITH_TASK_COUNT")?;
        (
            i,
            engine.counted(
                format!("JOB_COMPLETION_INDEX={i}"),
                found,
                "SHARDSMITH_TASK_COUNT",
            )?,
        )
    } else if let Some(rank) = engine.number("SLURM_PROCID")? {
        let found = engine.number("SLURM_NTASKS")?;
        (
            rank,
            engine.counted(format!("SLURM_PROCID={rank}"), found, "SLURM_NTASKS")?,
        )
    } else {
        refuse!(
            Task,
            "--task-index auto: none of SLURM_ARRAY_TASK_ID (a Slurm array), JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) or SLURM_PROCID (srun) is set; give --task-index N --task-count M"
        );
    };
    Ok(Some(TaskId {
        index,
        count,
        source,
    }))
}

/// What a cluster engine's variables say, with `--task-count` when given.
struct Engine<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    count: Option<u32>,
}

impl Engine<'_> {
    /// The variable `name` as a task number, if it is set and not blank.
    fn number(&self, name: &str) -> Result<Option<u32>> {
        match (self.env)(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .with_context(|| format!("{name}=`{v}` is not a task number")),
        }
    }

    /// The task count (`--task-count`, else `found` in the variable `how`) and the
    /// source shown for it.
    fn counted(&self, what: String, found: Option<u32>, how: &str) -> Result<(u32, String)> {
        match (self.count, found) {
            (Some(n), _) => Ok((n, format!("{what}, --task-count {n}"))),
            (None, Some(n)) => Ok((n, format!("{what}, {how}={n}"))),
            (None, None) => {
                refuse!(
                    Task,
                    "--task-index auto found {what} but no task count: give --task-count N"
                )
            }
        }
    }

    /// Task `id` of a Slurm array: the count from the array's bounds, which must run
    /// from 0 unless `--task-count` says how many tasks the run has.
    fn slurm_array(&self, id: u32) -> Result<(u32, String)> {
        let found = self.number("SLURM_ARRAY_TASK_COUNT")?;
        let (min, max) = (
            self.number("SLURM_ARRAY_TASK_MIN")?,
            self.number("SLURM_ARRAY_TASK_MAX")?,
        );
        if self.count.is_none() {
            // An array that is not 0..N-1 (a resubmitted index, `--array=1-8`) does not
            // tell the run's task count.
            let from_zero = min.is_none_or(|m| m == 0)
                && match (found, max) {
                    (Some(n), Some(max)) => max + 1 == n,
                    _ => true,
                };
            if !from_zero || (found.is_none() && max.is_none()) {
                refuse!(
                    Task,
                    "--task-index auto: this Slurm array runs indices {}..={} ({} task(s)), which does not say how many tasks the run has (a resubmitted index?); give --task-count N",
                    min.unwrap_or(id),
                    max.unwrap_or(id),
                    found.map_or_else(|| "?".to_string(), |n| n.to_string())
                );
            }
        }
        let found = found.or(max.map(|m| m + 1));
        self.counted(
            format!("SLURM_ARRAY_TASK_ID={id}"),
            found,
            "SLURM_ARRAY_TASK_COUNT",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)], index: &str, count: Option<u32>) -> Result<Option<TaskId>> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        resolve(Some(index), count, &|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    fn got(r: Result<Option<TaskId>>) -> (u32, u32, String) {
        let t = r.unwrap().unwrap();
        (t.index, t.count, t.source)
    }

    #[test]
    fn explicit_flags_win_and_the_engines_are_read_only_with_auto() {
        assert!(
            resolve(None, None, &|_| Some("3".into()))
                .unwrap()
                .is_none()
        );
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "3"),
            ("SLURM_PROCID", "0"),
        ];
        assert_eq!(with(&slurm, "1", Some(2)).unwrap().unwrap().index, 1);
        assert_eq!(
            got(with(&slurm, "auto", None)),
            (
                3,
                4,
                "SLURM_ARRAY_TASK_ID=3, SLURM_ARRAY_TASK_COUNT=4".into()
            )
        );
        assert_eq!(got(with(&slurm, "auto", Some(8))).1, 8);
        // A resubmitted index: an array of one says nothing of the run's count.
        let again = [
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_COUNT", "1"),
            ("SLURM_ARRAY_TASK_MIN", "2"),
            ("SLURM_ARRAY_TASK_MAX", "2"),
        ];
        let err = with(&again, "auto", None).unwrap_err().to_string();
        assert!(err.contains("give --task-count N"), "{err}");
        assert_eq!(got(with(&again, "auto", Some(4))).0, 2);
        // Only MIN/MAX (older Slurm).
        let old = [
            ("SLURM_ARRAY_TASK_ID", "1"),
            ("SLURM_ARRAY_TASK_MIN", "0"),
            ("SLURM_ARRAY_TASK_MAX", "6"),
        ];
        assert_eq!(got(with(&old, "auto", None)).1, 7);
    }

    #[test]
    fn kubernetes_and_srun() {
        let k8s = [("JOB_COMPLETION_INDEX", "5")];
        let err = with(&k8s, "auto", None).unwrap_err().to_string();
        assert!(err.contains("--task-count"), "{err}");
        assert_eq!(
            got(with(&k8s, "auto", Some(8))),
            (5, 8, "JOB_COMPLETION_INDEX=5, --task-count 8".into())
        );
        let k8s = [
            ("JOB_COMPLETION_INDEX", "5"),
            ("SHARDSMITH_TASK_COUNT", "6"),
        ];
        assert_eq!(got(with(&k8s, "auto", None)).1, 6);
        let srun = [("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2")];
        assert_eq!(
            got(with(&srun, "auto", None)),
            (1, 2, "SLURM_PROCID=1, SLURM_NTASKS=2".into())
        );
        let err = with(&[], "auto", None).unwrap_err().to_string();
        assert!(err.contains("none of SLURM_ARRAY_TASK_ID"), "{err}");
        let err = with(&[], "x", Some(2)).unwrap_err().to_string();
        assert!(err.contains("a number or `auto`"), "{err}");
        let err = resolve(Some("1"), None, &|_| None).unwrap_err().to_string();
        assert!(err.contains("needs --task-count"), "{err}");
    }
}
