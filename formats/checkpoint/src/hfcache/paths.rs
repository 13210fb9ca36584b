//! Names and paths of the cache: repository directory names, sorted directory
//! listings, lexical path resolution, and the limits the walks keep.

use std::path::{Component, Path, PathBuf};

use shardsmith_manifest::{Finding, FindingKind};

/// The prefixes of repository directories, with the kind of repository each holds.
pub(super) const PREFIXES: [(&str, &str); 3] = [
    ("models--", "model"),
    ("datasets--", "dataset"),
    ("spaces--", "space"),
];

/// Deepest directory nesting followed inside a snapshot or `refs/`.
pub(super) const MAX_DEPTH: usize = 64;

/// Longest ref file read; a commit hash is 40 bytes.
pub(super) const MAX_REF: u64 = 4096;

/// (`model`, `org/name`) of a repository directory name.
pub(super) fn repo_id(dir_name: &str) -> Option<(&'static str, String)> {
    PREFIXES.iter().find_map(|(prefix, kind)| {
        let rest = dir_name.strip_prefix(prefix)?;
        (!rest.is_empty()).then(|| (*kind, rest.replace("--", "/")))
    })
}

pub(super) fn unreadable(rel: &str, e: &std::io::Error) -> Finding {
    Finding::error(
        FindingKind::UnreadableFile,
        rel,
        format!("cannot be read: {e}"),
    )
}

/// The entries of a directory with UTF-8 names, sorted by name (others are skipped:
/// the hub writes hex names and repository paths).
pub(super) fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    out.sort();
    Ok(out)
}

/// Every file under `dir` (symlinks not followed), named relative to it with `/`.
pub(super) fn collect_files(
    dir: &Path,
    prefix: &str,
    depth: usize,
    out: &mut Vec<(String, PathBuf)>,
) {
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
pub(super) fn normalize(path: &Path) -> Option<PathBuf> {
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
