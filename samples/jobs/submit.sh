#!/bin/bash
# Submits the 8 pack tasks of samples/jobs/pack-array.sbatch, then `shardsmith merge`,
# which Slurm starts only once every task has succeeded (afterok). If a task fails, merge
# never starts (squeue shows it pending, reason DependencyNeverSatisfied): scancel it,
# resubmit the failed index alone (`sbatch --array=5 samples/jobs/pack-array.sbatch`) and
# then run `sbatch --wrap 'shardsmith merge s3://shards/wds'` (or merge by hand).
#
# Needs: run on a Slurm login node from the repository root; the environment of
# pack-array.sbatch (sbatch passes this shell's on to both jobs).
set -euo pipefail
array=$(sbatch --parsable samples/jobs/pack-array.sbatch)
array=${array%%;*} # --parsable prints ID or ID;CLUSTER
merge=$(sbatch --parsable --dependency=afterok:"$array" --job-name=shardsmith-merge \
    --output=shardsmith-merge-%j.out --wrap 'shardsmith merge s3://shards/wds')
echo "pack: array job $array (tasks 0-7); merge: job ${merge%%;*} after all of them succeed"
