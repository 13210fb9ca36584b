#!/usr/bin/env python3
"""Makes the DCP checkpoints of tests/checkpoint/torch_dcp.rs with the real writer, damages copies
with torch's own classes, and prints torch's verdict on every one.

    torch_dcp.py OUT

OUT/r2*, OUT/r4*: `dcp.save` from 2 and 4 gloo ranks on the CPU (spawned processes,
init_method tcp://127.0.0.1:<free port>) of one state dict: a DTensor `Shard(0)` weight
split unevenly over the ranks (1030 rows: 515 + 515, or 258 * 3 + 256), a DTensor of 3
elements (smaller than 4 ranks: one rank's local shard is empty), a plain tensor, and
optimizer state (an int, a float, a list: non-tensor items). Each world size saves it
three ways: the default TORCH_SAVE format (rN), with the ZStandard extension
(rN_zstd, items with transform_descriptors=['stream.zstd/1']) and with
serialization_format=SAFETENSORS (rN_st).

Then copies of them, each changed in one way (see EDITS). `.metadata` is edited by
loading it with pickle (torch's Metadata classes) and dumping it back as
FileSystemWriter.finish does.

Stdout: one JSON object, {dir: verdict}. A verdict has `items` (the storage records of
its `.metadata`), `sizes` (of its files) and `load`: what
`_load_state_dict(..., _EmptyStateDictLoadPlanner(), no_dist=True)` (the loader of
`dcp_to_torch_save`, which builds its state dict from `.metadata`) gives: {"ok": {fqn:
[dtype, shape, sum]}} or {"error": "Type: message"} (its first line); and `into_model`:
the same for `dcp.load` into the state dict the training script had (float32 tensors of
the saved shapes), the usual way a checkpoint is resumed.
"""
import copy
import io
import json
import os
import pickle
import re
import shutil
import socket
import sys
import warnings

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint._extension import ZStandard
from torch.distributed.checkpoint.default_planner import _EmptyStateDictLoadPlanner
from torch.distributed.checkpoint.filesystem import SerializationFormat
from torch.distributed.checkpoint.metadata import ChunkStorageMetadata, MetadataIndex
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict

warnings.filterwarnings("ignore")

ROWS = 1030


def weights():
    g = torch.Generator().manual_seed(28)
    return torch.randn(ROWS, 8, generator=g), torch.arange(3.0) + 1, torch.arange(8.0)


def _worker(rank, world, out, port):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (world,))
    w, small, b = weights()
    sd = {
        "model": {
            "w": distribute_tensor(w, mesh, [Shard(0)]),
            "small": distribute_tensor(small, mesh, [Shard(0)]),
            "b": b,
        },
        "optim": {"step": 7, "lr": 0.1, "names": ["a", "b"]},
    }
    for suffix, kw in (
        ("", {}),
        ("_zstd", {"_extensions": [ZStandard()]}),
        ("_st", {"serialization_format": SerializationFormat.SAFETENSORS}),
    ):
        dcp.save(sd, storage_writer=FileSystemWriter(f"{out}/r{world}{suffix}", **kw))
    dist.destroy_process_group()


def save(out, world):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_worker, args=(world, out, port), nprocs=world, join=True)


def read_meta(d):
    with open(os.path.join(d, ".metadata"), "rb") as f:
        return pickle.load(f)


def write_meta(d, m):
    with open(os.path.join(d, ".metadata"), "wb") as f:
        pickle.dump(m, f)


def key(m, fqn, offsets):
    return next(
        k for k in m.storage_data if k.fqn == fqn and list(k.offset or []) == offsets
    )


def swap(d):
    """The storage records of chunk 0 of `model.w` ([515, 8]) and of `model.b` ([8])
    exchanged: each points at the other's bytes."""
    m = read_meta(d)
    a, b = key(m, "model.w", [0, 0]), key(m, "model.b", [0])
    m.storage_data[a], m.storage_data[b] = m.storage_data[b], m.storage_data[a]
    write_meta(d, m)


def retile(d):
    """`model.w` declared as 514 + 516 rows over data stored as 515 + 515."""
    m = read_meta(d)
    t = m.state_dict_metadata["model.w"]
    t.chunks = [
        ChunkStorageMetadata(offsets=torch.Size([0, 0]), sizes=torch.Size([514, 8])),
        ChunkStorageMetadata(offsets=torch.Size([514, 0]), sizes=torch.Size([516, 8])),
    ]
    second = key(m, "model.w", [515, 0])
    info = m.storage_data.pop(second)
    m.storage_data[MetadataIndex("model.w", torch.Size([514, 0]), 1)] = info
    write_meta(d, m)


def bf16(d):
    """`model.w` declared bfloat16; its chunks are stored float32."""
    m = read_meta(d)
    m.state_dict_metadata["model.w"].properties.dtype = torch.bfloat16
    write_meta(d, m)


def lz4(d):
    """Every item declared with transform `stream.lz4/1`, which neither shardsmith nor
    torch's default registry knows."""
    m = read_meta(d)
    for info in m.storage_data.values():
        info.transform_descriptors = ["stream.lz4/1"]
    write_meta(d, m)


def append(d):
    with open(os.path.join(d, "__1_0.distcp"), "ab") as f:
        f.write(bytes(range(100)))


def item(d, fqn, offsets):
    m = read_meta(d)
    info = m.storage_data[key(m, fqn, offsets)]
    return os.path.join(d, info.relative_path), info.offset, info.length


def cut(d):
    """The rank file holding chunk 1 of `model.w` cut in the middle of that item."""
    path, offset, length = item(d, "model.w", [515, 0])
    os.truncate(path, offset + length // 2)


def zero_w(d):
    """1024 zero bytes in the middle of chunk 1 of `model.w` (in its stored or its
    compressed bytes)."""
    path, offset, length = item(d, "model.w", [515, 0])
    with open(path, "r+b") as f:
        f.seek(offset + length // 2)
        f.write(bytes(1024))


def no_metadata(d):
    os.remove(os.path.join(d, ".metadata"))


def stale(d):
    """An extra rank file from an earlier save of another world size (a copy of rank
    1's, which holds the non-tensor items: in the safetensors format, zips and then a
    blob)."""
    shutil.copy(os.path.join(d, "__1_0.distcp"), os.path.join(d, "__2_0.distcp"))


EDITS = {
    "r2_swap": ("r2", swap),
    "r2_retile": ("r2", retile),
    "r2_bf16": ("r2", bf16),
    "r2_append": ("r2", append),
    "r2_cut": ("r2", cut),
    "r2_zero": ("r2", zero_w),
    "r2_stale": ("r2", stale),
    "r2_zstd_retile": ("r2_zstd", retile),
    "r2_zstd_bf16": ("r2_zstd", bf16),
    "r2_zstd_append": ("r2_zstd", append),
    "r2_zstd_cut": ("r2_zstd", cut),
    "r2_zstd_zero": ("r2_zstd", zero_w),
    "r2_zstd_lz4": ("r2_zstd", lz4),
    "r2_st_stale": ("r2_st", stale),
    "r2_st_nometa": ("r2_st", no_metadata),
}


def first_line(e):
    """`Type: message` of the error, or of its cause: a CheckpointException carries each
    rank's traceback, whose last `SomeError: ...` line is what failed."""
    text = f"{type(e).__name__}: {e}"
    causes = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"^\s*[\w.]*(Error|Exception)(: |$)", line)
    ]
    return causes[-1] if len(causes) > 1 else text.splitlines()[0]


def summary(sd):
    out = {}

    def walk(prefix, v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(prefix + [k], x)
        elif isinstance(v, torch.Tensor):
            out[".".join(prefix)] = [str(v.dtype), list(v.shape), float(v.double().sum())]
        else:
            out[".".join(prefix)] = repr(v)

    walk([], sd)
    return out


def load(d):
    try:
        sd = {}
        _load_state_dict(
            sd,
            storage_reader=FileSystemReader(d),
            planner=_EmptyStateDictLoadPlanner(),
            no_dist=True,
        )
        return {"ok": summary(sd)}
    except BaseException as e:  # noqa: BLE001 - CheckpointException is a BaseException
        return {"error": first_line(e)}


def into_model(d):
    w, small, b = weights()
    sd = {
        "model": {"w": torch.zeros_like(w), "small": torch.zeros_like(small),
                  "b": torch.zeros_like(b)},
        "optim": {"step": 0, "lr": 0.0, "names": []},
    }
    try:
        dcp.load(sd, checkpoint_id=d, no_dist=True)
        return {"ok": summary(sd)}
    except BaseException as e:  # noqa: BLE001
        return {"error": first_line(e)}


def items(d):
    """Every storage record of `.metadata` (as saved, or as edited): [fqn, chunk
    offsets (None for a bytes item), file, offset, length, transform descriptors],
    sorted."""
    try:
        m = read_meta(d)
    except FileNotFoundError:
        return []
    return sorted(
        [k.fqn, None if k.offset is None else list(k.offset), v.relative_path, v.offset,
         v.length, list(v.transform_descriptors or [])]
        for k, v in m.storage_data.items()
    )


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    save(out, 2)
    save(out, 4)
    for name, (base, edit) in EDITS.items():
        shutil.copytree(os.path.join(out, base), os.path.join(out, name))
        edit(os.path.join(out, name))
    verdicts = {}
    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        verdicts[name] = {
            "load": load(d),
            "into_model": into_model(d),
            "items": items(d),
            "sizes": {f: os.path.getsize(os.path.join(d, f)) for f in sorted(os.listdir(d))},
        }
    json.dump(verdicts, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
