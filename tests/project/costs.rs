//! Tests by cost (issue 31). A test that needs more than the build (a Python env, an object
//! store server, root, Slurm) is `#[ignore = COST]`, COST one of [`COSTS`]: a plain
//! `cargo test` leaves it out and lists it as ignored with that reason, and
//! tests/run_all.sh (what CI runs) runs every test (`--include-ignored`). A test that
//! reaches a missing env without being ignored fails (`util::missing`), so the quick
//! subset cannot pass a test it did not run. Here: every ignored test in the workspace
//! names one of these costs, each cost is used, and tests/README.md lists them all.

use std::path::Path;

use crate::project::doc_links::root;

/// The reasons an integration test is ignored: what it needs and where that comes from.
pub const COSTS: &[&str] = &[
    "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)",
    "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)",
    "needs the images env: SHARDSMITH_IMAGES_PYTHON (tests/setup.sh)",
    "needs the images env and the python env: SHARDSMITH_IMAGES_PYTHON, SHARDSMITH_PYTHON (tests/setup.sh)",
    "needs the signing env: SHARDSMITH_MODEL_SIGNING (tests/setup.sh)",
    "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)",
    "needs an object store server: SHARDSMITH_AZURITE (tests/setup.sh)",
    "needs an object store server: SHARDSMITH_FAKE_GCS (tests/setup.sh)",
    "needs an object store server and the python env: SHARDSMITH_S3S_FS, SHARDSMITH_PYTHON (tests/setup.sh)",
    "needs root: it mounts a tmpfs",
    "needs root and Slurm: tests/servers/slurm.sh starts a one-node cluster",
    "needs root and Slurm and an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)",
];

/// Every `#[ignore…]` attribute in the `.rs` files below `dir`: (path relative to the
/// root, 1-based line, its reason when it has one).
fn ignores(root: &Path, dir: &Path, out: &mut Vec<(String, usize, Option<String>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            ignores(root, &path, out);
        } else if name.ends_with(".rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                let line = line.trim();
                if !line.starts_with("#[ignore") {
                    continue;
                }
                let reason = line
                    .strip_prefix("#[ignore = \"")
                    .and_then(|r| r.strip_suffix("\"]"))
                    .map(str::to_string);
                out.push((rel.clone(), i + 1, reason));
            }
        }
    }
}

#[test]
fn every_ignored_test_names_its_cost_and_every_cost_is_used() {
    let root = root();
    let mut found = Vec::new();
    ignores(&root, &root, &mut found);
    let wrong: Vec<String> = found
        .iter()
        .filter(|(_, _, reason)| !reason.as_deref().is_some_and(|r| COSTS.contains(&r)))
        .map(|(path, line, reason)| format!("{path}:{line}: {reason:?}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "an ignored test must name one of costs::COSTS (tests/run_all.sh runs every \
         ignored test, so a test ignored for another reason would run there):\n{}",
        wrong.join("\n")
    );
    for cost in COSTS {
        assert!(
            found.iter().any(|(_, _, r)| r.as_deref() == Some(cost)),
            "no test is ignored as `{cost}`: remove it from COSTS and tests/README.md"
        );
    }
}

#[test]
fn the_readme_lists_every_cost() {
    let readme = std::fs::read_to_string(root().join("tests/README.md")).unwrap();
    for cost in COSTS {
        assert!(
            readme.lines().any(|l| l.trim() == *cost),
            "tests/README.md does not list `{cost}` on a line of its own"
        );
    }
}
