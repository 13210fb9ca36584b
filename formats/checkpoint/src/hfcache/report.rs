//! What a cache check reports: per repository and per snapshot, with its findings.

use serde::Serialize;
use shardsmith_manifest::verify::VerifyReport;
use shardsmith_manifest::{Finding, FindingKind};

/// One snapshot of one repository.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

    /// The check as `verify` reports it: every finding (and `nothing_to_verify` when
    /// the cache holds no blob and no snapshot file, unless `allow_empty`), the blobs as
    /// the files checked, and notes saying what was compared. The coverage counts stay
    /// zero: a cache has no manifest, and its digests are the blobs' names.
    pub fn verify_report(&self, allow_empty: bool) -> VerifyReport {
        let mut findings = self.findings();
        if self.blobs_checked + self.links_checked + self.copies == 0 && !allow_empty {
            findings.push(Finding::error(
                FindingKind::NothingToVerify,
                ".",
                "the cache holds no blob and no snapshot file: nothing was checked; pass --allow-empty if that is expected",
            ));
        }
        let mut notes = vec![
            format!(
                "{} blob(s) compared with their content-addressed names (SHA-256 of LFS files, git blob SHA-1 of the others)",
                self.blobs_checked
            ),
            format!(
                "{} snapshot symlink(s) resolved, {} ref(s) read",
                self.links_checked, self.refs_checked
            ),
        ];
        notes.extend(self.copies_note());
        VerifyReport {
            files_checked: self.blobs_checked,
            bytes_checked: self.bytes_checked,
            findings,
            notes,
            ..VerifyReport::default()
        }
    }

    /// What is said of snapshot files that are copies, when there are some.
    pub fn copies_note(&self) -> Option<String> {
        (self.copies > 0).then(|| {
            format!(
                "{} snapshot file(s) are copies, not symlinks (a cache written without symlink support): present, not checked against a digest",
                self.copies
            )
        })
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
