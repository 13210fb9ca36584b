//! The Hugging Face hub cache (`~/.cache/huggingface/hub`), as `huggingface_hub` lays it
//! out: one directory per repository (`models--org--name`, `datasets--…`, `spaces--…`)
//! holding `blobs/` (each file's content, named by its etag: the SHA-256 of LFS files,
//! the git blob SHA-1 of the others), `snapshots/<commit>/…` (relative symlinks into
//! `../../blobs/`, or copies where symlinks are not supported), `refs/<branch>` (the
//! commit a branch or tag resolved to), `.no_exist/` (markers of files known to be
//! absent) and, beside the repositories, `.locks/` and (huggingface_hub 2.x) a shared
//! `blobs/<2 hex>/<xet hash>` store that repositories' blobs may link to.
//!
//! [`verify_cache`] hashes every content-addressed blob (in parallel, streaming) against
//! its name, resolves every snapshot symlink inside its repository's `blobs/`, and checks
//! that every ref names a present snapshot; it reports per snapshot whether everything
//! it links to is whole.

mod blobs;
mod links;
mod paths;
mod repo;
mod report;

use std::path::{Path, PathBuf};

use self::paths::repo_id;
use self::repo::Repo;
pub use self::report::{CacheReport, RepoStatus, SnapshotStatus};

/// The repository directories of a cache: `path` itself when it is one
/// (`models--org--name` with `blobs/` and `snapshots/`), else its direct children that
/// are. `None` when `path` is no cache.
pub fn cache_repos(path: &Path) -> Option<Vec<PathBuf>> {
    if is_repo_dir(path) {
        return Some(vec![path.to_path_buf()]);
    }
    let mut repos: Vec<PathBuf> = std::fs::read_dir(path)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| is_repo_dir(p))
        .collect();
    repos.sort();
    (!repos.is_empty()).then_some(repos)
}

fn is_repo_dir(path: &Path) -> bool {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| repo_id(n).is_some());
    named && path.join("blobs").is_dir() && path.join("snapshots").is_dir()
}

/// Checks the cache at `path` (a cache directory or one repository directory).
/// `progress_total` receives the number of blob bytes that will be read, `progress`
/// each block as it is read. `None` when `path` is no cache.
pub fn verify_cache(
    path: &Path,
    progress_total: &dyn Fn(u64),
    progress: &(dyn Fn(u64) + Sync),
) -> Option<CacheReport> {
    let dirs = cache_repos(path)?;
    let mut repos: Vec<Repo> = dirs.iter().map(|dir| list(path, dir)).collect();
    progress_total(
        repos
            .iter()
            .flat_map(|r| r.jobs.iter().map(|j| j.size))
            .sum(),
    );
    let mut report = CacheReport::default();
    for repo in &mut repos {
        repo.hash(progress, &mut report);
        report.links_checked += repo.links;
        report.copies += repo.copies;
        report.refs_checked += repo.refs.len() as u64;
    }
    report.repos = repos.into_iter().map(Repo::status).collect();
    Some(report)
}

/// One repository directory listed: its blobs, its snapshots' links, its refs.
fn list(root: &Path, dir: &Path) -> Repo {
    let mut repo = Repo::new(root, dir);
    repo.list_blobs(dir);
    repo.list_snapshots(dir);
    repo.read_refs(dir);
    repo
}
