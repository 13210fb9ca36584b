#!/usr/bin/env python3
"""wids reads shardsmith's wids-index.json, and `shardsmith index --for wids` writes what
`widsindex create` writes.

usage:
  check_wids_index.py read INPUT_DIR SHARD_DIR
      SHARD_DIR was packed from INPUT_DIR with `--index wids`: wids.ShardListDataset opened
      on SHARD_DIR/wids-index.json has len() == the number of input samples, and every
      sample, read by index in a shuffled order (random access), has the input's key and
      every field's bytes. The JSON has relative URLs, sorted, and no md5sum.
  check_wids_index.py write DIR
      Writes shards with webdataset.ShardWriter into DIR/sw and runs `widsindex create`
      over them (from DIR/sw, relative names) into DIR/widsindex.json.
  check_wids_index.py compare DIR
      DIR/sw/wids-index.json (by `shardsmith index`) equals DIR/widsindex.json, md5sum
      aside, and wids.ShardListDataset reads every ShardWriter sample through it.
Needs PYTHONPATH to include tests/interop/torchstub (wids imports torch at module level).
Prints one line per failed check and a final "N passed, M failed"; exits 1 on failure.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

from check_webdataset import expected_samples, wids_fields
from common import check, finish


def open_listed(index_path, tmp):
    import wids
    return wids.ShardListDataset(index_path, cache_dir=os.path.join(tmp, "cache"),
                                 transformations=[lambda sample: sample])


def read_all(index_path, expected):
    """Every sample through wids, by index in a shuffled order, against `expected`."""
    with tempfile.TemporaryDirectory() as tmp:
        listed = open_listed(index_path, tmp)
        check(len(listed) == len(expected), f"wids.ShardListDataset: len {len(listed)}, expected {len(expected)}")
        order = list(range(len(listed)))
        random.Random(7).shuffle(order)
        seen = set()
        for i in order:
            sample = listed[i]
            key = sample["__key__"]
            seen.add(key)
            check(wids_fields(sample) == expected.get(key), f"wids.ShardListDataset[{i}] ({key!r}) differs from the input")
        check(seen == set(expected), f"wids saw {len(seen)} distinct keys, expected {len(expected)}")


def check_json(index_path):
    with open(index_path) as f:
        index = json.load(f)
    check(index.get("__kind__") == "wids-shard-index-v1" and index.get("wids_version") == 1, "wrong __kind__ or wids_version")
    urls = [e["url"] for e in index["shardlist"]]
    check(urls == sorted(urls), "shardlist is not sorted by url")
    for e in index["shardlist"]:
        check("://" not in e["url"] and not e["url"].startswith("/"), f"{e['url']}: not relative")
        check("md5sum" not in e, f"{e['url']}: has an md5sum")
        path = os.path.join(os.path.dirname(index_path), e["url"])
        check(os.path.getsize(path) == e["filesize"], f"{e['url']}: filesize differs from the file")
    return index


def writer_samples():
    """Deterministic samples with several fields, sizes across block boundaries."""
    samples = []
    for i in range(40):
        rng = random.Random(i)
        sample = {"__key__": f"s{i:04d}", "txt": f"sample {i}".encode(),
                  "bin": bytes(rng.randrange(256) for _ in range((i * 97) % 1500))}
        if i % 3 == 0:
            sample["json"] = json.dumps({"i": i}).encode()
        samples.append(sample)
    return samples


def main():
    mode = sys.argv[1]
    if mode == "read":
        input_dir, shard_dir = sys.argv[2], sys.argv[3]
        index_path = os.path.join(shard_dir, "wids-index.json")
        check_json(index_path)
        read_all(index_path, expected_samples(input_dir, set()))
    elif mode == "write":
        import webdataset
        out = os.path.join(sys.argv[2], "sw")
        os.makedirs(out, exist_ok=True)
        with webdataset.ShardWriter(os.path.join(out, "part-%06d.tar"), maxcount=9, verbose=0) as sink:
            for sample in writer_samples():
                sink.write(sample)
        names = sorted(n for n in os.listdir(out) if n.endswith(".tar"))
        check(len(names) > 1, "ShardWriter wrote one shard only")
        widsindex = os.path.join(os.path.dirname(sys.executable), "widsindex")
        subprocess.run([widsindex, "create", "--name", "", "-o", os.path.join(sys.argv[2], "widsindex.json"), *names],
                       cwd=out, check=True, stdout=subprocess.DEVNULL)
    elif mode == "compare":
        base = sys.argv[2]
        ours = check_json(os.path.join(base, "sw", "wids-index.json"))
        with open(os.path.join(base, "widsindex.json")) as f:
            theirs = json.load(f)
        for e in theirs["shardlist"]:
            e.pop("md5sum", None)
        check(ours == theirs, f"shardsmith index differs from widsindex create:\n{json.dumps(ours)}\n{json.dumps(theirs)}")
        expected = {s["__key__"]: {k: v for k, v in s.items() if k != "__key__"} for s in writer_samples()}
        read_all(os.path.join(base, "sw", "wids-index.json"), expected)
    else:
        sys.exit(f"unknown mode {mode}")
    finish()


if __name__ == "__main__":
    main()
