#!/bin/bash
# Submits a split `shardsmith pack` as three dependent Slurm jobs:
#   1. `shardsmith list INPUT -o OUTPUT-files.tsv`: the input listed once (each task
#      would otherwise walk or list the whole input again);
#   2. the TASKS array tasks of samples/jobs/pack-array.sbatch, after 1 succeeded;
#   3. `shardsmith merge OUTPUT`, which Slurm starts only once every task has succeeded
#      (afterok).
# If a task fails, merge never starts (squeue shows it pending, reason
# DependencyNeverSatisfied): scancel it, resubmit the failed index alone
# (`TASKS=8 sbatch --array=5 samples/jobs/pack-array.sbatch`), then run
# `sbatch --wrap 'shardsmith merge OUTPUT'` (or merge by hand).
#
#   samples/jobs/submit.sh [SBATCH-OPTION...]     options given to all three jobs
#   INPUT=/lustre/raw OUTPUT=/lustre/shards TASKS=64 samples/jobs/submit.sh --partition=cpu
#
# Needs: a Slurm login node; the environment of pack-array.sbatch (sbatch passes this
# shell's on to all three jobs). Prints the three job ids last: `jobs LIST ARRAY MERGE`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export INPUT=${INPUT:-s3://raw/images} OUTPUT=${OUTPUT:-s3://shards/wds} TASKS=${TASKS:-8}
q() { printf '%q' "$1"; }
submitted=""
# One sbatch; prints the job id (--parsable prints ID or ID;CLUSTER). A failed
# submission fails the script, naming the jobs already submitted.
submit() {
    local out
    if ! command -v sbatch >/dev/null; then
        echo "submit.sh: sbatch not found: run this on a Slurm login node (nothing was submitted)" >&2
        return 1
    fi
    if ! out=$(sbatch --parsable "$@") || [ -z "${out%%;*}" ]; then
        if [ -n "$submitted" ]; then
            echo "submit.sh: sbatch failed (see its message above); already submitted: job(s)$submitted: cancel them with \`scancel$submitted\`" >&2
        else
            echo "submit.sh: sbatch failed (see its message above); nothing was submitted" >&2
        fi
        return 1
    fi
    echo "${out%%;*}"
}
list=$(submit "$@" --job-name=shardsmith-list \
    --output=shardsmith-list-%j.out \
    --wrap "shardsmith list $(q "$INPUT") -o $(q "$OUTPUT-files.tsv")")
submitted=" $list"
array=$(submit "$@" --array=0-$((TASKS - 1)) \
    --dependency=afterok:"$list" "$here/pack-array.sbatch")
submitted="$submitted $array"
merge=$(submit "$@" --dependency=afterok:"$array" \
    --job-name=shardsmith-merge --output=shardsmith-merge-%j.out \
    --wrap "shardsmith merge $(q "$OUTPUT")")
echo "list: job $list; pack: array job $array (tasks 0-$((TASKS - 1))); merge: job $merge after all of them succeed"
echo "jobs $list $array $merge"
