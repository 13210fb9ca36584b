//! Which files a signature covers, as model_signing decides it: every regular file under
//! the directory, hidden ones included, except the top-level `.git`, `.gitattributes`,
//! `.github` and `.gitignore`, the signature file itself when it lies inside, and the
//! paths a bundle lists in `ignore_paths` (component prefixes). Directories are not
//! recorded. A symlink to a file is signed as its target's content under the link's name
//! when allowed; a symlink to a directory is not followed.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use shardsmith_manifest::walk;

use crate::statement::Resource;
use crate::{Error, Result};

/// Top-level paths model_signing leaves out by default (and records as ignored).
pub const GIT_PATHS: [&str; 4] = [".git", ".gitattributes", ".github", ".gitignore"];

/// The files a signature covers.
#[derive(Clone, Debug, Default)]
pub struct FileSet {
    /// Relative name (`/`-separated; `.` for a single signed file) and full path.
    pub files: Vec<(String, PathBuf)>,
    /// Ignore entries applied, as the statement records them.
    pub ignore_paths: Vec<String>,
}

/// True when `rel` is an ignore entry or lies under one.
fn ignored(rel: &str, ignore: &[String]) -> bool {
    ignore.iter().any(|i| {
        rel == i
            || rel
                .strip_prefix(i.as_str())
                .is_some_and(|r| r.starts_with('/'))
    })
}

/// `signature` relative to `dir` when it lies inside it (it may not exist yet).
pub fn inside(dir: &Path, signature: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let name = signature.file_name()?;
    let parent = match signature.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let full = std::fs::canonicalize(parent).ok()?.join(name);
    let rel = full.strip_prefix(&dir).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Lists the files of `path` (a directory, or one file) a signature covers, leaving out
/// `ignore` (relative entries) besides the git paths.
pub fn collect(path: &Path, ignore: &[String], allow_symlinks: bool) -> Result<FileSet> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io("reading", path, e))?;
    if meta.file_type().is_symlink() && !allow_symlinks {
        return Err(Error::Symlink {
            path: path.display().to_string(),
        });
    }
    let target = std::fs::metadata(path).map_err(|e| Error::io("reading", path, e))?;
    if target.is_file() {
        return Ok(FileSet {
            files: vec![(".".into(), path.to_path_buf())],
            ignore_paths: Vec::new(),
        });
    }
    let mut ignore_paths: Vec<String> = GIT_PATHS.iter().map(|p| p.to_string()).collect();
    ignore_paths.extend(ignore.iter().cloned());
    ignore_paths.sort();
    ignore_paths.dedup();
    let walked = walk::walk(path, &|rel, _| {
        rel.to_str().is_none_or(|r| !ignored(r, &ignore_paths))
    })?;
    for skip in &walked.skipped {
        let rel = skip.rel.to_string_lossy().into_owned();
        let link = std::fs::symlink_metadata(path.join(&skip.rel))
            .is_ok_and(|m| m.file_type().is_symlink());
        let to_dir = std::fs::metadata(path.join(&skip.rel)).is_ok_and(|m| m.is_dir());
        match (link, to_dir) {
            (true, true) if allow_symlinks => {}
            (true, true) => return Err(Error::Symlink { path: rel }),
            _ => {
                return Err(Error::NotAFile {
                    path: rel,
                    reason: skip.reason.clone(),
                });
            }
        }
    }
    let mut files = Vec::with_capacity(walked.files.len());
    for file in walked.files {
        let Some(rel) = walk::rel_string(&file.rel) else {
            return Err(Error::NotAFile {
                path: file.rel.to_string_lossy().into_owned(),
                reason: "its name is not valid UTF-8".into(),
            });
        };
        if file.symlink && !allow_symlinks {
            return Err(Error::Symlink { path: rel });
        }
        files.push((rel, path.join(&file.rel)));
    }
    Ok(FileSet {
        files,
        ignore_paths,
    })
}

/// Every file's digest: from `known` (the digests of a read that already happened, by
/// relative name) or read now, in parallel, once; `progress` counts the bytes read.
pub fn digests(
    set: &FileSet,
    known: &BTreeMap<String, [u8; 32]>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<Resource>> {
    set.files
        .par_iter()
        .map(|(name, full)| {
            let digest = match known.get(name) {
                Some(d) => *d,
                None => sha256_file(full, progress)?,
            };
            Ok(Resource::file(name.clone(), digest))
        })
        .collect()
}

fn sha256_file(path: &Path, progress: &(dyn Fn(u64) + Sync)) -> Result<[u8; 32]> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("reading", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                progress(n as u64);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading", path, e)),
        }
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignore_entries_are_component_prefixes() {
        let ignore = vec![".git".to_string(), "sub".to_string()];
        assert!(ignored(".git", &ignore));
        assert!(ignored(".git/HEAD", &ignore));
        assert!(!ignored(".github", &ignore));
        assert!(ignored("sub/x", &ignore));
        assert!(!ignored("sub-x.txt", &ignore));
        assert!(!ignored("a/sub", &ignore));
    }

    #[test]
    fn the_set_follows_model_signing_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("w/n")).unwrap();
        std::fs::create_dir_all(root.join("emptydir")).unwrap();
        for (rel, data) in [
            (".git/HEAD", "ref"),
            (".gitignore", "x"),
            (".hidden", "h"),
            ("w/n/deep.bin", "d"),
            ("w-extra.txt", "e"),
            ("empty.bin", ""),
            ("model.sig", "{}"),
        ] {
            std::fs::write(root.join(rel), data).unwrap();
        }
        let set = collect(root, &["model.sig".into()], false).unwrap();
        let names: Vec<&str> = set.files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [".hidden", "empty.bin", "w-extra.txt", "w/n/deep.bin"]
        );
        assert_eq!(
            set.ignore_paths,
            [
                ".git",
                ".gitattributes",
                ".github",
                ".gitignore",
                "model.sig"
            ]
        );
        std::os::unix::fs::symlink("empty.bin", root.join("link")).unwrap();
        let err = collect(root, &[], false).unwrap_err().to_string();
        assert!(err.starts_with("`link` is a symlink"), "{err}");
        let set = collect(root, &[], true).unwrap();
        assert!(set.files.iter().any(|(n, _)| n == "link"));
        assert_eq!(
            inside(root, &root.join("model.sig")).as_deref(),
            Some("model.sig")
        );
        assert_eq!(inside(root, &root.join("../elsewhere.sig")), None);
        let single = collect(&root.join("empty.bin"), &[], false).unwrap();
        assert_eq!(single.files[0].0, ".");
    }
}
