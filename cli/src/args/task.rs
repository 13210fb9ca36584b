//! The flags that split a `pack` or `tokenize` run into tasks.

use clap::Args;

/// Splitting a `pack` or `tokenize` run into tasks (Slurm arrays, Kubernetes Indexed Jobs).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Split runs (Slurm arrays, Kubernetes Indexed Jobs)")]
pub struct TaskArgs {
    /// Run as task INDEX (0-based) of --task-count tasks sharing OUTPUT, or `auto`
    ///
    /// Every task lists the same input and makes the same plan; this one does only its
    /// share, balanced by bytes (pack: consecutive shards under their final names;
    /// tokenize: consecutive input files). When every task has finished, `shardsmith
    /// merge OUTPUT` writes the manifest (pack: the bytes a single run writes; tokenize:
    /// the same documents and tokens in the same order). A task run again resumes its share.
    /// `auto` reads the scheduler's variables: SLURM_ARRAY_TASK_ID (Slurm array; the
    /// count from SLURM_ARRAY_TASK_COUNT when the array is 0..N-1), SLURM_PROCID and
    /// SLURM_NTASKS (srun), JOB_COMPLETION_INDEX (Kubernetes Indexed Job; the count from
    /// --task-count or SHARDSMITH_TASK_COUNT). An explicit --task-count wins. `--rank` is
    /// an alias. Examples: `--task-index auto --task-count 8`, `--task-index 3 --task-count 8`.
    #[arg(long, visible_alias = "rank", value_name = "INDEX|auto")]
    pub task_index: Option<String>,

    /// Number of tasks, with --task-index (`--world-size` is an alias)
    ///
    /// Give it in job scripts: a resubmitted Slurm array index (`sbatch --array=5`) sees
    /// an array of one. Example: `--task-count 8`.
    #[arg(
        long,
        visible_alias = "world-size",
        value_name = "N",
        requires = "task_index"
    )]
    pub task_count: Option<u32>,
}
