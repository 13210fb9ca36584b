//! One repository directory of the cache: its blobs and refs listed, its blobs hashed,
//! and its status per snapshot (snapshot links are walked in `links`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use shardsmith_manifest::{Finding, FindingKind};

use super::blobs::{self, Address, Job, is_lower_hex};
use super::paths::{MAX_REF, collect_files, normalize, read_dir_sorted, repo_id, unreadable};
use super::report::{CacheReport, RepoStatus, SnapshotStatus};

/// One repository directory as listed, then checked.
pub(super) struct Repo {
    pub(super) kind: &'static str,
    pub(super) id: String,
    /// Prefix of its findings' paths: `models--org--name/`, or empty.
    pub(super) prefix: String,
    pub(super) jobs: Vec<Job>,
    /// Blob findings, by blob name.
    pub(super) blob_findings: BTreeMap<String, Vec<Finding>>,
    /// Files of each snapshot: (blob name linked to, if any), and its link findings.
    pub(super) snapshots: BTreeMap<String, Snapshot>,
    /// Ref name → commit, for the refs that name a commit.
    pub(super) refs: BTreeMap<String, String>,
    /// Findings of the refs and of blobs no snapshot links to, and everything else.
    pub(super) other: Vec<Finding>,
    pub(super) links: u64,
    pub(super) copies: u64,
}

#[derive(Default)]
pub(super) struct Snapshot {
    pub(super) files: u64,
    pub(super) blobs: BTreeSet<String>,
    pub(super) findings: Vec<Finding>,
}

impl Repo {
    pub(super) fn new(root: &Path, dir: &Path) -> Self {
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
        Self {
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
        }
    }

    pub(super) fn rel(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    pub(super) fn list_blobs(&mut self, dir: &Path) {
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
    pub(super) fn list_shared_blob(&mut self, dir: &Path, name: &str, path: PathBuf, rel: &str) {
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

    pub(super) fn read_refs(&mut self, dir: &Path) {
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

    pub(super) fn hash(&mut self, progress: &(dyn Fn(u64) + Sync), report: &mut CacheReport) {
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

    pub(super) fn status(self) -> RepoStatus {
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
