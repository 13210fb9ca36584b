//! Running the interop scripts of `tests/interop` under the pinned Python envs: the
//! readers' env (`SHARDSMITH_PYTHON`: the interpreter of `tests/interop/setup_env.sh`'s
//! venv; tests/setup.sh sets it) and the torch env. A test that needs one is ignored
//! unless asked for (tests/README.md); asked for without it, it fails under CI (where
//! skipping would hide a broken set-up).

use std::path::{Path, PathBuf};

use crate::util::*;

pub fn python() -> Option<PathBuf> {
    server_bin("SHARDSMITH_PYTHON", "python env")
}

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop")
}

/// Runs the interop env's Python with `args` (a script and its arguments), the torch
/// stub and `tests/interop` on `PYTHONPATH` (wids and streaming import torch at module
/// level: the stub stands in for it) and `env` besides; asserts that it exited 0 and
/// returns its stdout. `None` without `SHARDSMITH_PYTHON` (see [`python`] and
/// [`missing`]). Every test that runs a Python reader goes through here.
pub fn run_python(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Option<String> {
    let python = python()?;
    let interop = interop_dir();
    let path = std::env::join_paths([interop.join("torchstub"), interop.clone()]).unwrap();
    let o = std::process::Command::new(python)
        .args(args)
        .env("PYTHONPATH", path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{stdout}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
    Some(stdout)
}

/// The torch env's interpreter (`SHARDSMITH_TORCH_PYTHON`, set by tests/run_all.sh from
/// `tests/interop/setup_env.sh torch`): real torch, `torch.distributed.checkpoint`,
/// safetensors and zstandard. `None` when it is unset and [`missing`] lets the test pass.
pub fn torch_python() -> Option<PathBuf> {
    server_bin("SHARDSMITH_TORCH_PYTHON", "torch env")
}

/// Runs the torch env's Python with `args` (a script under `tests/interop` and its
/// arguments), `tests/interop` on `PYTHONPATH` (no torch stub: this is the real one);
/// asserts that it exited 0 and returns its stdout. `None` without the torch env (see
/// [`torch_python`]). Scripts report a reader's verdict as data on stdout rather than by
/// failing, so a test asserts it beside shardsmith's.
pub fn run_torch(args: &[&str]) -> Option<String> {
    let python = torch_python()?;
    let o = std::process::Command::new(python)
        .args(args)
        .current_dir(interop_dir())
        .env("PYTHONPATH", interop_dir())
        .env("OMP_NUM_THREADS", "1")
        .output()
        .unwrap();
    let stdout = text(&o.stdout);
    assert!(
        o.status.success(),
        "{args:?}: exit {:?}\n{stdout}\n{}",
        o.status.code(),
        text(&o.stderr)
    );
    Some(stdout)
}

/// Runs `tests/interop/SCRIPT ARGS...` (see [`run_python`]) and asserts that every check
/// it made passed (`N passed, 0 failed`), showing its output if not.
pub fn check(script: &str, args: &[&str]) {
    // streaming's StreamingDataset names its shared memory by the first free prefix
    // number, and two processes that start together can pick the same one
    // (`FileExistsError: '/000374_locals'`): the scripts that use it take turns.
    static STREAMING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = (script == "check_mds.py").then(|| {
        STREAMING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    let path = interop_dir().join(script);
    let mut all = vec![path.to_str().unwrap()];
    all.extend(args);
    let Some(stdout) = run_python(&all, &[]) else {
        return;
    };
    assert!(
        stdout.contains(" passed, 0 failed"),
        "{script} {args:?}: the python readers disagree:\n{stdout}"
    );
}
