//! The snapshots of a repository: every file walked, and every symlink judged by what
//! it says (it must stay inside the repository's `blobs/`).

use std::path::{Component, Path};

use shardsmith_manifest::{Finding, FindingKind};

use super::blobs::Address;
use super::paths::{MAX_DEPTH, normalize, read_dir_sorted, unreadable};
use super::repo::{Repo, Snapshot};

impl Repo {
    pub(super) fn list_snapshots(&mut self, dir: &Path) {
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
}
