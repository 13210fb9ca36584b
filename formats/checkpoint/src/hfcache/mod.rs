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

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use shardsmith_manifest::{Finding, FindingKind};

use blobs::{Address, Job, is_lower_hex};

/// The prefixes of repository directories, with the kind of repository each holds.
const PREFIXES: [(&str, &str); 3] = [
    ("models--", "model"),
    ("datasets--", "dataset"),
    ("spaces--", "space"),
];

/// Deepest directory nesting followed inside a snapshot or `refs/`.
const MAX_DEPTH: usize = 64;

/// Longest ref file read; a commit hash is 40 bytes.
const MAX_REF: u64 = 4096;

/// One snapshot of one repository.
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotStatus {
    /// The snapshot's directory name: the commit hash.
    pub commit: String,
    /// The refs (`main`, `v1.0`, `refs/pr/1`) that name this commit.
    pub refs: Vec<String>,
    /// Files in the snapshot (symlinks and copies).
    pub files: u64,
    /// True when every file links to a present blob whose content matches its name.
    pub intact: bool,
    /// Error-severity findings.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// The findings of the snapshot's links and of the blobs they point at.
    pub findings: Vec<Finding>,
}

/// One repository of the cache.
#[derive(Clone, Debug, Serialize)]
pub struct RepoStatus {
    /// `model`, `dataset` or `space`.
    pub kind: String,
    /// The repository id, `org/name`.
    pub repo: String,
    /// Its directory, relative to the path checked (empty when it is the path).
    pub dir: String,
    /// Every snapshot, by commit.
    pub snapshots: Vec<SnapshotStatus>,
    /// Every finding of the repository: blobs, links, refs.
    pub findings: Vec<Finding>,
}

/// What a check of a cache found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CacheReport {
    /// Every repository, in name order.
    pub repos: Vec<RepoStatus>,
    /// Blobs hashed and compared with their names.
    pub blobs_checked: u64,
    /// Bytes read.
    pub bytes_checked: u64,
    /// Snapshot symlinks resolved.
    pub links_checked: u64,
    /// Snapshot files that are copies rather than symlinks (symlinks not supported
    /// where the cache was written): present, not checked against a digest.
    pub copies: u64,
    /// Ref files read.
    pub refs_checked: u64,
}

impl CacheReport {
    /// Every finding of every repository, sorted by path.
    pub fn findings(&self) -> Vec<Finding> {
        let mut all: Vec<Finding> = self
            .repos
            .iter()
            .flat_map(|r| r.findings.iter().cloned())
            .collect();
        all.sort_by(|a, b| (&a.path, a.kind).cmp(&(&b.path, b.kind)));
        all
    }

    /// True when every snapshot a ref names is present and intact (every snapshot, for
    /// a repository without refs) and every ref is readable.
    pub fn referenced_intact(&self) -> bool {
        self.repos.iter().all(|repo| {
            let bad_ref = repo
                .findings
                .iter()
                .any(|f| f.is_error() && f.kind == FindingKind::BadPointer);
            let has_refs = repo.snapshots.iter().any(|s| !s.refs.is_empty());
            !bad_ref
                && repo
                    .snapshots
                    .iter()
                    .filter(|s| !has_refs || !s.refs.is_empty())
                    .all(|s| s.intact)
        })
    }
}

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

/// (`model`, `org/name`) of a repository directory name.
fn repo_id(dir_name: &str) -> Option<(&'static str, String)> {
    PREFIXES.iter().find_map(|(prefix, kind)| {
        let rest = dir_name.strip_prefix(prefix)?;
        (!rest.is_empty()).then(|| (*kind, rest.replace("--", "/")))
    })
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
    let mut repos: Vec<Repo> = dirs.iter().map(|dir| Repo::list(path, dir)).collect();
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

/// One repository directory as listed, then checked.
struct Repo {
    kind: &'static str,
    id: String,
    /// Prefix of its findings' paths: `models--org--name/`, or empty.
    prefix: String,
    jobs: Vec<Job>,
    /// Blob findings, by blob name.
    blob_findings: BTreeMap<String, Vec<Finding>>,
    /// Files of each snapshot: (blob name linked to, if any), and its link findings.
    snapshots: BTreeMap<String, Snapshot>,
    /// Ref name → commit, for the refs that name a commit.
    refs: BTreeMap<String, String>,
    /// Findings of the refs and of blobs no snapshot links to, and everything else.
    other: Vec<Finding>,
    links: u64,
    copies: u64,
}

#[derive(Default)]
struct Snapshot {
    files: u64,
    blobs: BTreeSet<String>,
    findings: Vec<Finding>,
}

impl Repo {
    fn list(root: &Path, dir: &Path) -> Self {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let (kind, id) = repo_id(&name).unwrap_or(("model", name.clone()));
        let prefix = if dir == root {
            String::new()
        } else {
            format!("{name}/")
        };
        let mut repo = Self {
            kind,
            id,
            prefix,
            jobs: Vec::new(),
            blob_findings: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            refs: BTreeMap::new(),
            other: Vec::new(),
            links: 0,
            copies: 0,
        };
        repo.list_blobs(dir);
        repo.list_snapshots(dir);
        repo.read_refs(dir);
        repo
    }

    fn rel(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    fn list_blobs(&mut self, dir: &Path) {
        let entries = match read_dir_sorted(&dir.join("blobs")) {
            Ok(entries) => entries,
            Err(e) => {
                let rel = self.rel("blobs");
                self.other.push(unreadable(&rel, &e));
                return;
            }
        };
        for (name, path) in entries {
            let rel = self.rel(&format!("blobs/{name}"));
            if name.ends_with(".incomplete") {
                self.other.push(Finding::warning(
                    FindingKind::LeftoverTempFile,
                    rel,
                    format!(
                        "{}: a download that was interrupted (huggingface_hub resumes or replaces it on the next download)",
                        self.id
                    ),
                ));
                continue;
            }
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) => {
                    self.other.push(unreadable(&rel, &e));
                    continue;
                }
            };
            if meta.file_type().is_symlink() && Address::of(&name).is_some() {
                self.list_shared_blob(dir, &name, path, &rel);
                continue;
            }
            match Address::of(&name) {
                Some(address) if meta.is_file() => self.jobs.push(Job {
                    path,
                    address,
                    size: meta.len(),
                }),
                Some(_) => self.other.push(Finding::error(
                    FindingKind::WrongContent,
                    rel,
                    format!("{}: a blob that is not a regular file", self.id),
                )),
                None => self.other.push(Finding::warning(
                    FindingKind::UnlistedFile,
                    rel,
                    format!(
                        "{}: not named by a SHA-256 or a git blob SHA-1: its content cannot be checked",
                        self.id
                    ),
                )),
            }
        }
    }

    /// A repository blob that is a symlink: huggingface_hub 2.x keeps Xet files once
    /// per cache in `<cache>/blobs/<2 hex>/<xet hash>` and links each repository's
    /// `blobs/<etag>` to it (relative). The content is hashed through the link against
    /// the etag; a link elsewhere, or to nothing, is a finding.
    fn list_shared_blob(&mut self, dir: &Path, name: &str, path: PathBuf, rel: &str) {
        let shown = match std::fs::read_link(&path) {
            Ok(target) => target,
            Err(e) => {
                self.other.push(unreadable(rel, &e));
                return;
            }
        };
        let resolved = if shown.is_absolute() {
            normalize(&shown)
        } else {
            normalize(&dir.join("blobs").join(&shown))
        };
        let store = dir
            .parent()
            .and_then(|cache| normalize(&cache.join("blobs")));
        let inside = resolved
            .zip(store)
            .is_some_and(|(resolved, store)| resolved.starts_with(&store) && resolved != store);
        let shown = shown.to_string_lossy().into_owned();
        if !inside {
            self.other.push(
                Finding::error(
                    FindingKind::BadPointer,
                    rel,
                    format!(
                        "{}: the blob is a symlink out of the cache's shared blob store",
                        self.id
                    ),
                )
                .values("a file in the cache's blobs/ store", shown),
            );
            return;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => {
                let address = Address::of(name).unwrap_or(Address::Sha256);
                self.jobs.push(Job {
                    path,
                    address,
                    size: meta.len(),
                });
            }
            _ => self.other.push(
                Finding::error(
                    FindingKind::MissingFile,
                    rel,
                    format!(
                        "{}: the blob links to the cache's shared store, where its file is missing",
                        self.id
                    ),
                )
                .values(shown, "no file"),
            ),
        }
    }

    fn list_snapshots(&mut self, dir: &Path) {
        let repo_blobs = dir.join("blobs");
        let entries = match read_dir_sorted(&dir.join("snapshots")) {
            Ok(entries) => entries,
            Err(e) => {
                let rel = self.rel("snapshots");
                self.other.push(unreadable(&rel, &e));
                return;
            }
        };
        for (commit, path) in entries {
            let mut snapshot = Snapshot::default();
            if !path.is_dir() {
                let rel = self.rel(&format!("snapshots/{commit}"));
                self.other.push(Finding::warning(
                    FindingKind::UnlistedFile,
                    rel,
                    format!("{}: not a snapshot directory", self.id),
                ));
                continue;
            }
            self.walk_snapshot(
                &repo_blobs,
                &path,
                &format!("snapshots/{commit}"),
                0,
                &mut snapshot,
            );
            self.snapshots.insert(commit, snapshot);
        }
    }

    /// Every file under a snapshot directory: a symlink is resolved lexically and must
    /// land on a present blob of this repository; a regular file is a copy.
    fn walk_snapshot(
        &mut self,
        repo_blobs: &Path,
        dir: &Path,
        rel_dir: &str,
        depth: usize,
        snapshot: &mut Snapshot,
    ) {
        let entries = match read_dir_sorted(dir) {
            Ok(entries) => entries,
            Err(e) => {
                snapshot.findings.push(unreadable(&self.rel(rel_dir), &e));
                return;
            }
        };
        for (name, path) in entries {
            let rel_path = format!("{rel_dir}/{name}");
            let rel = self.rel(&rel_path);
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) => {
                    snapshot.findings.push(unreadable(&rel, &e));
                    continue;
                }
            };
            if meta.is_dir() {
                if depth >= MAX_DEPTH {
                    snapshot.findings.push(Finding::error(
                        FindingKind::BadLayout,
                        rel,
                        format!("{}: directories nested over {MAX_DEPTH} deep", self.id),
                    ));
                } else {
                    self.walk_snapshot(repo_blobs, &path, &rel_path, depth + 1, snapshot);
                }
                continue;
            }
            snapshot.files += 1;
            if meta.is_file() {
                self.copies += 1;
                continue;
            }
            if !meta.file_type().is_symlink() {
                snapshot.findings.push(Finding::error(
                    FindingKind::WrongContent,
                    rel,
                    format!("{}: neither a symlink to a blob nor a file", self.id),
                ));
                continue;
            }
            self.links += 1;
            let target = match std::fs::read_link(&path) {
                Ok(target) => target,
                Err(e) => {
                    snapshot.findings.push(unreadable(&rel, &e));
                    continue;
                }
            };
            if let Some(blob) = self.check_link(repo_blobs, &path, &target, &rel, snapshot) {
                snapshot.blobs.insert(blob);
            }
        }
    }

    /// The blob a snapshot symlink points at, with a finding when it points elsewhere
    /// or at nothing.
    fn check_link(
        &self,
        repo_blobs: &Path,
        link: &Path,
        target: &Path,
        rel: &str,
        snapshot: &mut Snapshot,
    ) -> Option<String> {
        let shown = target.to_string_lossy().into_owned();
        let resolved = if target.is_absolute() {
            normalize(target)
        } else {
            normalize(&link.parent().unwrap_or(Path::new("")).join(target))
        };
        let blobs = normalize(repo_blobs);
        let blob = resolved
            .as_ref()
            .zip(blobs.as_ref())
            .and_then(|(resolved, blobs)| resolved.strip_prefix(blobs).ok())
            .and_then(|rest| {
                let mut parts = rest.components();
                match (parts.next(), parts.next()) {
                    (Some(Component::Normal(name)), None) => name.to_str().map(str::to_owned),
                    _ => None,
                }
            })
            .filter(|name| Address::of(name).is_some());
        let Some(blob) = blob else {
            snapshot.findings.push(
                Finding::error(
                    FindingKind::BadPointer,
                    rel,
                    format!(
                        "{}: the snapshot symlink points outside the repository's blobs/ (readers get another file, or none)",
                        self.id
                    ),
                )
                .values("a blob of this repository (../../blobs/<etag>)", &shown),
            );
            return None;
        };
        if target.is_absolute() {
            snapshot.findings.push(
                Finding::warning(
                    FindingKind::BadPointer,
                    rel,
                    format!(
                        "{}: an absolute symlink: it breaks when the cache is moved or mounted elsewhere",
                        self.id
                    ),
                )
                .values(format!("../../blobs/{blob}"), &shown),
            );
        }
        if !repo_blobs.join(&blob).is_file() {
            snapshot.findings.push(
                Finding::error(
                    FindingKind::MissingFile,
                    rel,
                    format!(
                        "{}: the snapshot symlink is dangling: its blob is not in the cache",
                        self.id
                    ),
                )
                .values(&shown, "no file"),
            );
        }
        Some(blob)
    }

    fn read_refs(&mut self, dir: &Path) {
        let refs = dir.join("refs");
        if !refs.is_dir() {
            return;
        }
        let mut files = Vec::new();
        collect_files(&refs, "", 0, &mut files);
        for (name, path) in files {
            let rel = self.rel(&format!("refs/{name}"));
            // huggingface_hub writes a ref to `<name>.<8 hex>.tmp` and renames it: one
            // left behind is an interrupted update, not a ref.
            if name.ends_with(".tmp") {
                self.other.push(Finding::warning(
                    FindingKind::LeftoverTempFile,
                    rel,
                    format!("{}: a ref update that was interrupted", self.id),
                ));
                continue;
            }
            let mut text = String::new();
            let read =
                std::fs::File::open(&path).and_then(|f| f.take(MAX_REF).read_to_string(&mut text));
            if let Err(e) = read {
                self.other.push(unreadable(&rel, &e));
                continue;
            }
            let commit = text.trim();
            if commit.len() != 40 || !is_lower_hex(commit) {
                let mut shown: String = commit.chars().take(80).collect();
                if shown.len() < commit.len() {
                    shown.push_str("...");
                }
                self.other.push(
                    Finding::error(
                        FindingKind::BadPointer,
                        rel,
                        format!(
                            "{}: ref `{name}` does not hold a commit hash: loading the revision fails",
                            self.id
                        ),
                    )
                    .values("a 40-hex commit hash", format!("{shown:?}")),
                );
                continue;
            }
            if !self.snapshots.contains_key(commit) {
                self.other.push(
                    Finding::error(
                        FindingKind::BadPointer,
                        rel,
                        format!(
                            "{}: ref `{name}` names commit {commit}, which has no snapshot: loading `{name}` offline fails",
                            self.id
                        ),
                    )
                    .values(format!("snapshots/{commit}"), "no such snapshot"),
                );
            }
            self.refs.insert(name, commit.to_string());
        }
    }

    fn hash(&mut self, progress: &(dyn Fn(u64) + Sync), report: &mut CacheReport) {
        let results: Vec<(String, Option<Finding>)> = self
            .jobs
            .par_iter()
            .map(|job| {
                let name = job
                    .path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                let rel = self.rel(&format!("blobs/{name}"));
                let finding = match blobs::digest(job, progress) {
                    Err(e) => Some(unreadable(&rel, &e)),
                    Ok(actual) if actual != name => Some(
                        Finding::error(
                            FindingKind::HashMismatch,
                            rel,
                            format!(
                                "{}: the blob's {} differs from its name: its content changed after download",
                                self.id,
                                job.address.what()
                            ),
                        )
                        .values(&name, actual),
                    ),
                    Ok(_) => None,
                };
                (name, finding)
            })
            .collect();
        report.blobs_checked += self.jobs.len() as u64;
        report.bytes_checked += self.jobs.iter().map(|j| j.size).sum::<u64>();
        for (name, finding) in results {
            if let Some(finding) = finding {
                self.blob_findings.entry(name).or_default().push(finding);
            }
        }
    }

    fn status(self) -> RepoStatus {
        let mut by_commit: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (name, commit) in &self.refs {
            by_commit.entry(commit).or_default().push(name.clone());
        }
        let mut findings = self.other.clone();
        findings.extend(self.blob_findings.values().flatten().cloned());
        let snapshots = self
            .snapshots
            .iter()
            .map(|(commit, s)| {
                let mut own = s.findings.clone();
                findings.extend(s.findings.iter().cloned());
                for blob in &s.blobs {
                    own.extend(self.blob_findings.get(blob).into_iter().flatten().cloned());
                }
                own.sort_by(|a, b| (&a.path, a.kind).cmp(&(&b.path, b.kind)));
                let errors = own.iter().filter(|f| f.is_error()).count();
                SnapshotStatus {
                    commit: commit.clone(),
                    refs: by_commit.get(commit.as_str()).cloned().unwrap_or_default(),
                    files: s.files,
                    intact: errors == 0,
                    errors,
                    warnings: own.len() - errors,
                    findings: own,
                }
            })
            .collect();
        findings.sort_by(|a, b| (&a.path, a.kind).cmp(&(&b.path, b.kind)));
        RepoStatus {
            kind: self.kind.to_string(),
            repo: self.id,
            dir: self.prefix.trim_end_matches('/').to_string(),
            snapshots,
            findings,
        }
    }
}

fn unreadable(rel: &str, e: &std::io::Error) -> Finding {
    Finding::error(
        FindingKind::UnreadableFile,
        rel,
        format!("cannot be read: {e}"),
    )
}

/// The entries of a directory with UTF-8 names, sorted by name (others are skipped:
/// the hub writes hex names and repository paths).
fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    out.sort();
    Ok(out)
}

/// Every file under `dir` (symlinks not followed), named relative to it with `/`.
fn collect_files(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = read_dir_sorted(dir) else {
        return;
    };
    for (name, path) in entries {
        let rel = format!("{prefix}{name}");
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() && depth < MAX_DEPTH => {
                collect_files(&path, &format!("{rel}/"), depth + 1, out);
            }
            Ok(m) if m.is_dir() => {}
            _ => out.push((rel, path)),
        }
    }
}

/// `path` with `.` and `..` resolved lexically (symlinks are not followed: a snapshot
/// link is judged by what it says); `None` when `..` climbs above the start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_and_lexical_paths() {
        assert_eq!(
            repo_id("models--org--name"),
            Some(("model", "org/name".to_string()))
        );
        assert_eq!(repo_id("datasets--glue"), Some(("dataset", "glue".into())));
        assert_eq!(repo_id("models--"), None);
        assert_eq!(repo_id("checkpoints"), None);
        assert_eq!(
            normalize(Path::new("/c/m/snapshots/abc/sub/../../../blobs/x")),
            Some(PathBuf::from("/c/m/blobs/x"))
        );
        assert_eq!(normalize(Path::new("a/../..")), None);
    }
}
