"""Type stubs of the Rust extension. Import :mod:`shardsmith`, not this module: its
functions return JSON text that :mod:`shardsmith` turns into typed reports."""

from typing import Optional

__version__: str

class ShardsmithError(Exception):
    """A call could not run (what the CLI reports with exit 2)."""

def verify(
    path: str,
    manifest: Optional[str] = None,
    deep: bool = False,
    expect_root: Optional[str] = None,
    allow_empty: bool = False,
) -> str: ...
def manifest(
    path: str,
    output: Optional[str] = None,
    tensors: bool = False,
    force: bool = False,
    accept_unfinished: bool = False,
) -> str: ...
def audit(run_dir: str, deep: bool = False) -> str: ...
