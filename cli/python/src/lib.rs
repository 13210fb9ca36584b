//! `shardsmith._native`: the Rust half of the Python API (the `shardsmith-api` wheel).
//!
//! Three functions, `verify`, `manifest` and `audit`, each running the CLI's command
//! (its settings and run, from the `shardsmith_cli` library: [`api`]) with the GIL
//! released for the whole call, and
//! returning the command's `--json` report (and each finding's text) as JSON text that
//! the pure-Python package `shardsmith` (`python/shardsmith/__init__.py`) turns into
//! typed objects. Whatever the CLI reports with exit 2 raises `ShardsmithError` with
//! the CLI's message; findings never raise. Nothing here prints or exits.
//!
//! Depends on the application library (`shardsmith_cli`) for the commands, so that the
//! Python API and the CLI check, run and report the same way; it never draws progress
//! bars (it passes `NoProgress`) and never prints.

// No `allow(unsafe_code)`: pyo3 0.30's macro expansions pass the workspace's
// `unsafe_code = "deny"`, and this crate writes no `unsafe` of its own.

pub mod api;

use std::path::PathBuf;

use pyo3::prelude::*;

pyo3::create_exception!(
    shardsmith,
    ShardsmithError,
    pyo3::exceptions::PyException,
    "A call could not run: a missing path, an unreadable or foreign manifest, a bad argument, an I/O error.\n\nRaised for everything the CLI reports with exit 2, with the message the CLI prints after `error: `. Problems found in the data are never raised: they are the report's findings."
);

fn run(
    py: Python<'_>,
    call: impl FnOnce() -> Result<serde_json::Value, api::Refusal> + Send,
) -> PyResult<String> {
    py.detach(call)
        .map(|value| value.to_string())
        .map_err(|refusal| ShardsmithError::new_err(refusal.message))
}

/// verify(path, manifest=None, deep=False, expect_root=None, allow_empty=False) -> str
///
/// `shardsmith verify PATH --json`: the report and the findings' texts, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, manifest=None, deep=false, expect_root=None, allow_empty=false))]
fn verify(
    py: Python<'_>,
    path: PathBuf,
    manifest: Option<PathBuf>,
    deep: bool,
    expect_root: Option<String>,
    allow_empty: bool,
) -> PyResult<String> {
    run(py, move || {
        api::verify(
            &path,
            manifest.as_deref(),
            deep,
            expect_root.as_deref(),
            allow_empty,
        )
    })
}

/// manifest(path, output=None, tensors=False, force=False, accept_unfinished=False) -> str
///
/// `shardsmith manifest PATH --json`: writes manifest.json (and SHA256SUMS) as the CLI
/// does; returns its report, the files listed and the walk's findings, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, output=None, tensors=false, force=false, accept_unfinished=false))]
fn manifest(
    py: Python<'_>,
    path: PathBuf,
    output: Option<PathBuf>,
    tensors: bool,
    force: bool,
    accept_unfinished: bool,
) -> PyResult<String> {
    run(py, move || {
        api::manifest(&path, output.as_deref(), tensors, force, accept_unfinished)
    })
}

/// audit(run_dir, deep=False) -> str
///
/// `shardsmith audit RUN_DIR --json` of a local run directory, as JSON text.
#[pyfunction]
#[pyo3(signature = (run_dir, deep=false))]
fn audit(py: Python<'_>, run_dir: PathBuf, deep: bool) -> PyResult<String> {
    run(py, move || api::audit(&run_dir, deep))
}

/// The Rust half of shardsmith's Python API; import `shardsmith`, not this module.
#[pymodule]
mod _native {
    use pyo3::prelude::*;

    #[pymodule_export]
    use super::{ShardsmithError, audit, manifest, verify};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", super::api::VERSION)
    }
}
