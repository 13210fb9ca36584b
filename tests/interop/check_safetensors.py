#!/usr/bin/env python3
"""Opens each safetensors file given with the reference reader (safe_open, which runs
every header/offset/coverage check; numpy has no bf16, so tensors are sliced, not
converted) and
prints one line per file: `ok PATH` or `error PATH: MESSAGE`. Used by
tests/checkpoint/interop.rs to check that shardsmith accepts exactly what the reference
reader loads."""
import sys

from safetensors import safe_open

for path in sys.argv[1:]:
    try:
        with safe_open(path, framework="np") as f:
            for name in f.keys():
                f.get_slice(name).get_shape()
        print(f"ok {path}")
    except Exception as e:  # noqa: BLE001 - any refusal counts
        print(f"error {path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
