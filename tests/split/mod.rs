//! Split runs: `list` made once for every task, `pack` split into tasks finished by
//! `merge`, the Kubernetes job files of samples/jobs, and a real Slurm array.

mod job_files;
mod list;
mod slurm;
pub mod tasks;
