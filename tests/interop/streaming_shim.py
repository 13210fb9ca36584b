"""Imports mosaicml-streaming's `streaming.base` without `streaming/__init__.py`, which
pulls in the vision and text packages (torchvision, transformers) that the readers and
writer do not need. Put tests/interop/torchstub on PYTHONPATH first."""
import importlib.util
import os
import sys
import types


def load():
    if "streaming" not in sys.modules:
        root = os.path.dirname(importlib.util.find_spec("streaming").origin)
        for name, path in (("streaming", root), ("streaming.base", os.path.join(root, "base"))):
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module
    from streaming.base.dataset import StreamingDataset
    from streaming.base.format.mds.writer import MDSWriter
    from streaming.base.local import LocalDataset
    from streaming.base.util import clean_stale_shared_memory, merge_index
    return types.SimpleNamespace(StreamingDataset=StreamingDataset, MDSWriter=MDSWriter, LocalDataset=LocalDataset,
                                 clean=clean_stale_shared_memory, merge_index=merge_index)
