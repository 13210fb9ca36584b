//! Deterministic directory walk shared by `pack`, `manifest` and `verify`.
//!
//! Symlinks to files are followed (the file's content is what counts); symlinks to
//! directories are not followed (no cycles, no escaping the tree) and are reported as
//! skipped, as are broken symlinks, sockets, FIFOs and devices. Directories are read in
//! parallel; the result is sorted by path bytes, so it does not depend on the thread
//! count or on the file system's directory order.

use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::{Error, Result};

/// A regular file found by the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkFile {
    /// Path relative to the walk root.
    pub rel: PathBuf,
    /// Size in bytes (of the target, for a symlink).
    pub size: u64,
    /// True when reached through a symlink.
    pub symlink: bool,
}

/// An entry the walk left out, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkSkip {
    /// Path relative to the walk root.
    pub rel: PathBuf,
    /// Why.
    pub reason: String,
}

/// Everything found under a root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// Regular files, sorted by path bytes.
    pub files: Vec<WalkFile>,
    /// Entries left out, sorted by path bytes.
    pub skipped: Vec<WalkSkip>,
}

/// Decides which entries the walk looks at: called with the relative path and whether
/// the entry is a directory; `false` leaves it out silently.
pub type Filter<'a> = dyn Fn(&Path, bool) -> bool + Sync + 'a;

/// True for the files shardsmith writes beside a dataset, which are never data to read:
/// its temporary and state entries (`.shardsmith-*`), a `manifest.json` that shardsmith
/// wrote (told by its first bytes: `"tool": "shardsmith"`), and the `SHA256SUMS` beside
/// one. `rel` is relative to `root`.
pub fn is_own_metadata(root: &Path, rel: &Path) -> bool {
    let Some(name) = rel.file_name() else {
        return false;
    };
    if name
        .as_encoded_bytes()
        .starts_with(crate::TEMP_PREFIX.as_bytes())
    {
        return true;
    }
    let manifest = if name == crate::MANIFEST_FILE {
        root.join(rel)
    } else if name == crate::SUMS_FILE {
        root.join(rel).with_file_name(crate::MANIFEST_FILE)
    } else {
        return false;
    };
    let mut head = [0u8; 512];
    let n = fs::File::open(manifest)
        .and_then(|mut f| read_head(&mut f, &mut head))
        .unwrap_or(0);
    head[..n]
        .windows(20)
        .any(|w| w == b"\"tool\": \"shardsmith\"")
}

fn read_head(file: &mut fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Walks `root` recursively. Only an unreadable root is an error; everything below it
/// that cannot be read is reported in [`Walk::skipped`].
pub fn walk(root: &Path, filter: &Filter<'_>) -> Result<Walk> {
    let meta = fs::metadata(root).map_err(|e| Error::io("reading", root, e))?;
    if !meta.is_dir() {
        return Err(Error::io(
            "reading",
            root,
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        ));
    }
    fs::read_dir(root).map_err(|e| Error::io("reading directory", root, e))?;
    let mut walk = walk_dir(root, PathBuf::new(), filter);
    walk.files.par_sort_unstable_by(|a, b| {
        a.rel
            .as_os_str()
            .as_encoded_bytes()
            .cmp(b.rel.as_os_str().as_encoded_bytes())
    });
    walk.skipped.sort_by(|a, b| {
        a.rel
            .as_os_str()
            .as_encoded_bytes()
            .cmp(b.rel.as_os_str().as_encoded_bytes())
    });
    Ok(walk)
}

enum Entry {
    File(WalkFile),
    Dir(PathBuf),
    Skip(WalkSkip),
}

fn walk_dir(root: &Path, rel: PathBuf, filter: &Filter<'_>) -> Walk {
    let dir = root.join(&rel);
    let mut out = Walk::default();
    let reader = match fs::read_dir(&dir) {
        Ok(reader) => reader,
        Err(e) => {
            out.skipped.push(WalkSkip {
                rel,
                reason: format!("directory cannot be read: {e}"),
            });
            return out;
        }
    };
    let mut names: Vec<fs::DirEntry> = Vec::new();
    for entry in reader {
        match entry {
            Ok(entry) => names.push(entry),
            Err(e) => {
                out.skipped.push(WalkSkip {
                    rel: rel.clone(),
                    reason: format!("directory listing failed part-way: {e}"),
                });
                break;
            }
        }
    }
    let entries: Vec<Entry> = names
        .into_par_iter()
        .filter_map(|entry| {
            let mut child = rel.join(entry.file_name());
            child.shrink_to_fit();
            classify(&dir, child, &entry, filter)
        })
        .collect();
    let mut subdirs = Vec::new();
    for entry in entries {
        match entry {
            Entry::File(f) => out.files.push(f),
            Entry::Dir(d) => subdirs.push(d),
            Entry::Skip(s) => out.skipped.push(s),
        }
    }
    let nested: Vec<Walk> = subdirs
        .into_par_iter()
        .map(|sub| walk_dir(root, sub, filter))
        .collect();
    out.files
        .reserve_exact(nested.iter().map(|w| w.files.len()).sum());
    for walk in nested {
        out.files.extend(walk.files);
        out.skipped.extend(walk.skipped);
    }
    out
}

/// Sorts one directory entry. The entry's own `metadata` stats through the open
/// directory (no path walk from the root per file).
fn classify(dir: &Path, rel: PathBuf, entry: &fs::DirEntry, filter: &Filter<'_>) -> Option<Entry> {
    let name = rel.file_name().map(PathBuf::from).unwrap_or_default();
    let full = dir.join(&name);
    let skip = |reason: String| {
        Some(Entry::Skip(WalkSkip {
            rel: rel.clone(),
            reason,
        }))
    };
    let file_type = match entry.file_type() {
        Ok(t) => t,
        Err(_) => match fs::symlink_metadata(&full) {
            Ok(m) => m.file_type(),
            Err(e) => return skip(format!("cannot be examined: {e}")),
        },
    };
    if file_type.is_dir() {
        return filter(&rel, true).then_some(Entry::Dir(rel));
    }
    if !filter(&rel, false) {
        return None;
    }
    if file_type.is_file() {
        return match entry.metadata() {
            Ok(m) => Some(Entry::File(WalkFile {
                rel,
                size: m.len(),
                symlink: false,
            })),
            Err(e) => skip(format!("cannot be examined: {e}")),
        };
    }
    if file_type.is_symlink() {
        return match fs::metadata(&full) {
            Ok(m) if m.is_file() => Some(Entry::File(WalkFile {
                rel,
                size: m.len(),
                symlink: true,
            })),
            Ok(m) if m.is_dir() => skip("symlink to a directory (not followed)".into()),
            Ok(_) => skip("symlink to something that is not a regular file".into()),
            Err(e) => skip(format!("broken symlink: {e}")),
        };
    }
    skip("not a regular file (socket, FIFO or device)".into())
}

/// `rel` as a `/`-separated UTF-8 string, or `None` when it is not valid UTF-8.
pub fn rel_string(rel: &Path) -> Option<String> {
    let mut out = String::new();
    for (i, part) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(part.as_os_str().to_str()?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_sorts_follows_file_links_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("b/c")).unwrap();
        fs::write(root.join("b/c/z.txt"), "zz").unwrap();
        fs::write(root.join("a.txt"), "a").unwrap();
        fs::write(root.join("b/y.txt"), "yyy").unwrap();
        std::os::unix::fs::symlink(root.join("a.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("dirlink")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("broken.txt")).unwrap();
        let walk = walk(root, &|_, _| true).unwrap();
        let files: Vec<(String, u64, bool)> = walk
            .files
            .iter()
            .map(|f| (rel_string(&f.rel).unwrap(), f.size, f.symlink))
            .collect();
        assert_eq!(
            files,
            vec![
                ("a.txt".into(), 1, false),
                ("b/c/z.txt".into(), 2, false),
                ("b/y.txt".into(), 3, false),
                ("link.txt".into(), 1, true),
            ]
        );
        let skipped: Vec<String> = walk
            .skipped
            .iter()
            .map(|s| rel_string(&s.rel).unwrap())
            .collect();
        assert_eq!(skipped, vec!["broken.txt", "dirlink"]);
        assert!(walk.skipped[0].reason.starts_with("broken symlink"));
        assert!(walk.skipped[1].reason.contains("not followed"));
    }

    #[test]
    fn filter_prunes_directories_and_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("keep")).unwrap();
        fs::create_dir_all(dir.path().join("drop")).unwrap();
        fs::write(dir.path().join("keep/x"), "x").unwrap();
        fs::write(dir.path().join("drop/y"), "y").unwrap();
        fs::write(dir.path().join("skip.me"), "s").unwrap();
        let walk = walk(dir.path(), &|rel, _| {
            rel != Path::new("drop") && rel != Path::new("skip.me")
        })
        .unwrap();
        assert_eq!(walk.files.len(), 1);
        assert_eq!(walk.files[0].rel, Path::new("keep/x"));
    }

    #[test]
    fn missing_root_is_an_error() {
        let err = walk(Path::new("/definitely/not/here"), &|_, _| true).unwrap_err();
        assert!(err.to_string().contains("/definitely/not/here"));
    }
}
