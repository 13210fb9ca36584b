#!/usr/bin/env python3
"""Reads what shardsmith wrote straight to an S3 server with the real readers, and
compares every sample with the same command's local output.

usage: check_remote.py LOCAL_MDS S3_MDS LOCAL_WDS S3_WDS
  (LOCAL_*: directories; S3_*: s3://bucket/prefix URLs of the same datasets)
Needs AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and S3_ENDPOINT_URL (as
mosaicml-streaming's S3 download reads it) in the environment.
  1. streaming.StreamingDataset(remote="s3://...", validate_hash=<index's hash>) yields
     the samples StreamingDataset(local dir) yields, in order, every column equal;
  2. webdataset reads each tar shard from a presigned URL (boto3) and yields the
     samples it yields from the local shard, every key and field's bytes equal.
Prints "N passed, M failed"; exits 1 on failure.
"""
import json
import os
import sys
import tempfile

import boto3
import webdataset as wds

import streaming_shim
from common import check, finish


def as_plain(sample):
    return {k: (v.tobytes() if hasattr(v, "tobytes") else v) for k, v in sample.items()}


def main():
    local_mds, s3_mds, local_wds, s3_wds = sys.argv[1:5]
    s = streaming_shim.load()
    index = json.load(open(os.path.join(local_mds, "index.json")))
    hashes = index["shards"][0]["hashes"]
    validate = hashes[0] if hashes else None
    with tempfile.TemporaryDirectory() as tmp:
        s.clean()
        want = [as_plain(x) for x in s.StreamingDataset(local=local_mds, remote=None, shuffle=False, batch_size=1)]
        s.clean()
        got = [as_plain(x) for x in s.StreamingDataset(remote=s3_mds, local=os.path.join(tmp, "cache"),
                                                       validate_hash=validate, shuffle=False, batch_size=1)]
        check(len(want) > 0 and len(got) == len(want), f"MDS: {len(got)} samples from s3, {len(want)} locally")
        for i, (a, b) in enumerate(zip(got, want)):
            check(a == b, f"MDS sample {i} differs")

    client = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    bucket, _, prefix = s3_wds[len("s3://"):].partition("/")
    shards = sorted(n for n in os.listdir(local_wds) if n.endswith(".tar"))
    check(len(shards) > 1, "several tar shards")
    for name in shards:
        url = client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": f"{prefix}/{name}"},
                                            ExpiresIn=600)
        remote = [dict(x) for x in wds.WebDataset(url, shardshuffle=False)]
        local = [dict(x) for x in wds.WebDataset(os.path.join(local_wds, name), shardshuffle=False)]
        # The readers record where a sample came from; that differs by design.
        strip = lambda xs: [{k: v for k, v in x.items() if k not in ("__url__", "__local_path__")} for x in xs]
        same = len(local) > 0 and strip(remote) == strip(local)
        check(same, f"{name}: samples read through a presigned URL differ: "
                    f"{[sorted(x) for x in remote[:1]]} vs {[sorted(x) for x in local[:1]]}")
    finish()


if __name__ == "__main__":
    main()
