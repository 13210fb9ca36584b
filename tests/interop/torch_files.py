#!/usr/bin/env python3
"""Makes the torch files of tests/checkpoint/torch_files.rs with the real writers (torch.save, zip
and legacy; safetensors; DCP in one process) into DIR, then loads each with the real
readers and prints their verdicts as one JSON object on stdout:

    {"FILE": {"weights_only": "ok KEYS" | "error: TYPE: MESSAGE",
              "full": ...,            # torch.load(weights_only=False), only for files
                                      # made here (nothing hostile is loaded so)
              "aliased": true}, ...}  # for the tied files: is `a` the same object as `b`
     "legacy_layout": {"first": N, "count": N, "second": N}}  # legacy.pt's storages

KEYS is the sorted list of the top-level keys (and of `model.` keys one level down).
Usage: torch_files.py DIR
"""
import collections
import io
import json
import os
import pickletools
import struct
import sys
import warnings

warnings.simplefilter("ignore")

import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def path(name):
    return os.path.join(out, name)


def save_both(obj, name):
    """`name.pt` (zip) and `name_legacy.pt` (legacy serialization)."""
    torch.save(obj, path(f"{name}.pt"))
    torch.save(obj, path(f"{name}_legacy.pt"), _use_new_zipfile_serialization=False)


t = torch.arange(12, dtype=torch.float32).reshape(3, 4)

# One tensor object under two names.
save_both({"a": t, "b": t}, "alias")
save_file({"b": t.clone()}, path("only_b.safetensors"))


# A module with tied weights: its state_dict holds the one Parameter twice.
class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, 4)
        self.head = torch.nn.Linear(4, 6, bias=False)
        self.head.weight = self.embed.weight


save_both(Tied().state_dict(), "tied")
# Views of one storage.
save_both({"w": t, "row": t[1], "col": t[:, 2]}, "views")
# A set (weights_only allows it) and a frozenset (it does not); a Counter (allowed).
torch.save({"w": t, "s": {1, 2, 3}}, path("set.pt"))
torch.save({"w": t, "f": frozenset({1, 2})}, path("frozenset.pt"))
torch.save({"w": t, "c": collections.Counter(x=2)}, path("counter.pt"))
# Tensors with no element: empty storages, not placeholders.
save_both({"w": t, "e": torch.zeros(0), "e2": torch.empty(0, 4, dtype=torch.bfloat16)}, "empty")
dcp.save({"w": t.clone(), "e": torch.zeros(0)}, checkpoint_id=path("dcp_empty"))
# A value beside the tensors in DCP: a bytes item.
dcp.save({"w": t.clone(), "step": 7}, checkpoint_id=path("dcp_step"))
# Tensors of other layouts: not plain strided views of one storage.
torch.save({"w": t, "s": t.to_sparse()}, path("sparse.pt"))
torch.save({"w": t, "q": torch.quantize_per_tensor(t, 0.5, 0, torch.quint8)}, path("quantized.pt"))
# Values beside the tensors.
torch.save({"w": t, "step": 5, "lr": 0.001, "name": "adamw"}, path("scalars.pt"))
torch.save({"w": t, "step": 6, "lr": 0.001, "name": "adamw"}, path("scalars2.pt"))
# Pickle protocol 4: weights_only refuses its opcodes.
torch.save({"w": t}, path("proto4.pt"), pickle_protocol=4)
# float8 has no typed storage class: an untyped storage, unreadable in a legacy file.
torch.save({"w": t, "f8": t.to(torch.float8_e4m3fn)}, path("f8_legacy.pt"),
           _use_new_zipfile_serialization=False)

# A legacy file cut at several points, and one whose element count was changed.
torch.save({"a": t, "u": torch.arange(5)}, path("legacy.pt"), _use_new_zipfile_serialization=False)
data = open(path("legacy.pt"), "rb").read()
f = io.BytesIO(data)
ends = []
for _ in range(5):
    for _op in pickletools.genops(f):
        pass
    ends.append(f.tell())
first = ends[-1]  # the first storage's element count
(count,) = struct.unpack("<q", data[first:first + 8])
# Storages are written in key order; their element sizes follow from the file length.
second = None
for size in (8, 4):
    at = first + 8 + count * size
    if at + 8 <= len(data):
        (n,) = struct.unpack("<q", data[at:at + 8])
        for size2 in (8, 4):
            if at + 8 + n * size2 == len(data):
                second = at
if second is None:
    raise SystemExit("could not locate the second storage")
cuts = {
    "cut_pickle": data[:ends[3] - 5],
    "cut_count": data[:first + 4],
    "cut_storage": data[:first + 8 + 3],
    "cut_between": data[:second],
    "cut_last_byte": data[:-1],
    "wrong_count": data[:first] + struct.pack("<q", count + 1) + data[first + 8:],
    "trailing": data + b"\0" * 16,
}
for name, b in cuts.items():
    with open(path(f"legacy_{name}.pt"), "wb") as w:
        w.write(b)


def keys(x):
    if isinstance(x, dict):
        ks = [str(k) for k in x]
        if isinstance(x.get("model"), dict):
            ks += [f"model.{k}" for k in x["model"]]
        return sorted(ks)
    return type(x).__name__


def verdict(file, weights_only):
    try:
        x = torch.load(file, weights_only=weights_only)
        return "ok " + json.dumps(keys(x))
    except Exception as e:  # noqa: BLE001 - the reader's refusal is the verdict
        lines = str(e).splitlines()
        why = [ln.strip() for ln in lines if "Unsupported" in ln][:1]
        return f"error: {type(e).__name__}: {' | '.join((lines[:1] or ['']) + why)}"


verdicts = {}
for name in sorted(os.listdir(out)):
    full = path(name)
    if not name.endswith(".pt"):
        continue
    v = {"weights_only": verdict(full, True), "full": verdict(full, False)}
    if name.startswith(("alias", "tied")) and v["weights_only"].startswith("ok"):
        x = torch.load(full)
        a, b = ("a", "b") if "a" in x else ("embed.weight", "head.weight")
        v["aliased"] = x[a] is x[b]
    verdicts[name] = v
# DCP: loaded into a template of the right shapes, as dcp.load is used.
try:
    template = {"w": torch.empty(3, 4), "e": torch.empty(0)}
    dcp.load(template, checkpoint_id=path("dcp_empty"))
    ok = torch.equal(template["w"], t)
    verdicts["dcp_empty"] = {"dcp_load": "ok" if ok else "error: values differ"}
except Exception as e:  # noqa: BLE001
    verdicts["dcp_empty"] = {"dcp_load": f"error: {type(e).__name__}: {e}"}
# Where legacy.pt's storages lie (their order follows keys torch makes from addresses).
verdicts["legacy_layout"] = {"first": first, "count": count, "second": second}
try:
    template = {"w": torch.empty(3, 4), "step": 0}
    dcp.load(template, checkpoint_id=path("dcp_step"))
    verdicts["dcp_step"] = {"dcp_load": f"ok step={template['step']}"}
except Exception as e:  # noqa: BLE001
    verdicts["dcp_step"] = {"dcp_load": f"error: {type(e).__name__}: {e}"}
print(json.dumps(verdicts, indent=1, sort_keys=True))
