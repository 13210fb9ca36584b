//! The local file system as an input: a directory tree ([`LocalTree`]) and a file read
//! at any offset ([`LocalFile`]).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use shardsmith_manifest::Skipped;
use shardsmith_manifest::walk;

use crate::files_from::{self, LeftOut};
use crate::source::{InputListing, InputSource, ListedFile, RangeRead, ReadError};
use crate::{Error, Result};

fn open_error(e: io::Error) -> ReadError {
    if e.kind() == io::ErrorKind::NotFound {
        ReadError::Vanished
    } else {
        ReadError::Unreadable(e.to_string())
    }
}

/// A local file as a [`RangeRead`].
pub struct LocalFile {
    file: File,
    len: u64,
}

impl LocalFile {
    /// Wraps an open file and takes its length.
    pub fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self { file, len })
    }
}

impl RangeRead for LocalFile {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        self.file.read_at(buf, offset)
    }
}

/// A directory tree on the local file system, optionally restricted to a list of
/// relative paths (`--files-from`).
pub struct LocalTree {
    root: PathBuf,
    files_from: Option<String>,
    exclude: Option<PathBuf>,
}

impl LocalTree {
    /// Every file under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            files_from: None,
            exclude: None,
        }
    }

    /// Only the files of `list`: one path relative to the root per line, in any order,
    /// or `PATH<TAB>SIZE` (see [`files_from`]).
    pub fn with_files(mut self, list: String) -> Self {
        self.files_from = Some(list);
        self
    }

    /// Leaves out a sub-directory (relative to the root), e.g. an output directory
    /// placed inside the input.
    pub fn excluding(mut self, rel: impl Into<PathBuf>) -> Self {
        self.exclude = Some(rel.into());
        self
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// A local path named as an input: a directory is a tree of its own; a file is its
    /// directory's tree with that file alone (its name and size are returned).
    pub fn for_path(path: &Path) -> Result<(Self, Option<(String, u64)>)> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io("reading input", path, e))?;
        if meta.is_dir() {
            return Ok((Self::new(path), None));
        }
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                Error::io(
                    "reading input",
                    path,
                    io::Error::new(io::ErrorKind::InvalidInput, "not a UTF-8 file name"),
                )
            })?
            .to_string();
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tree = Self::new(parent).with_files(name.clone());
        Ok((tree, Some((name, meta.len()))))
    }

    fn list_given(&self, given: &str) -> Result<InputListing> {
        let meta =
            std::fs::metadata(&self.root).map_err(|e| Error::io("reading", &self.root, e))?;
        if !meta.is_dir() {
            return Err(Error::io(
                "reading",
                &self.root,
                io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        let given = files_from::sorted(given);
        Ok(files_from::listing(&given, &|rel| self.size_of_listed(rel)))
    }

    /// [`InputSource::every_file`] below `dir` (`prefix` is its relative path).
    fn every_below(
        &self,
        dir: &Path,
        prefix: &str,
        test: &dyn Fn(&str) -> Option<bool>,
        seen: &mut bool,
    ) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let Ok(name) = entry.file_name().into_string() else {
                return false;
            };
            let rel = format!("{prefix}{name}");
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            if kind.is_dir() {
                if Some(Path::new(&rel)) == self.exclude.as_deref() {
                    continue;
                }
                if !self.every_below(&entry.path(), &format!("{rel}/"), test, seen) {
                    return false;
                }
            } else if kind.is_symlink() && std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir())
            {
                continue;
            } else {
                match test(&rel) {
                    Some(true) => *seen = true,
                    Some(false) => return false,
                    None => {}
                }
            }
        }
        true
    }

    /// The size of a `--files-from` entry that gives none, or why it is left out.
    fn size_of_listed(&self, rel: &str) -> std::result::Result<u64, LeftOut> {
        match std::fs::symlink_metadata(self.path(rel)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(LeftOut::Missing),
            Err(e) => Err(LeftOut::Unexaminable(e)),
            Ok(m) if m.is_file() => Ok(m.len()),
            Ok(m) if m.is_symlink() => match std::fs::metadata(self.path(rel)) {
                Ok(t) if t.is_file() => Ok(t.len()),
                Ok(t) if t.is_dir() => Err(LeftOut::SymlinkToDirectory),
                Ok(_) => Err(LeftOut::SymlinkToSpecial),
                Err(e) => Err(LeftOut::BrokenSymlink(e)),
            },
            Ok(m) if m.is_dir() => Err(LeftOut::Directory),
            Ok(_) => Err(LeftOut::Special),
        }
    }
}

impl InputSource for LocalTree {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn display(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    fn list(&self) -> Result<InputListing> {
        if let Some(given) = &self.files_from {
            return self.list_given(given);
        }
        let exclude = self.exclude.as_deref();
        let walked = walk::walk(&self.root, &|rel, _| {
            Some(rel) != exclude && !walk::is_own_metadata(&self.root, rel)
        })?;
        let mut listing = InputListing::default();
        let skipped = &mut listing.skipped;
        // `into_iter().filter_map().collect()` reuses the walk's buffer in place: the
        // listing never exists twice, one file at a time.
        listing.files = walked
            .files
            .into_iter()
            .filter_map(|file| {
                // On Unix the walk's relative path is already `/`-separated: reuse its buffer.
                match file.rel.into_os_string().into_string() {
                    Ok(rel) => Some(ListedFile {
                        rel,
                        size: file.size,
                    }),
                    Err(raw) => {
                        skipped.push(Skipped {
                            path: raw.to_string_lossy().into_owned(),
                            reason: "name is not valid UTF-8: webdataset and wids need UTF-8 member names"
                                .into(),
                        });
                        None
                    }
                }
            })
            .collect();
        for skip in walked.skipped {
            listing.skipped.push(Skipped {
                path: skip.rel.to_string_lossy().into_owned(),
                reason: skip.reason,
            });
        }
        Ok(listing)
    }

    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        let mut file = File::open(self.path(rel)).map_err(open_error)?;
        let start = buf.len();
        let wanted = usize::try_from(size)
            .map_err(|_| ReadError::Unreadable("too large for memory".into()))?;
        // One byte more than listed: a regular file that returns fewer bytes than asked
        // is at its end, so the usual case costs one read() and still notices growth.
        buf.resize(start + wanted + 1, 0);
        let mut filled = 0;
        let result = loop {
            match file.read(&mut buf[start + filled..]) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    filled += n;
                    if filled > wanted {
                        break Err(ReadError::Changed {
                            read: filled as u64,
                        });
                    }
                    if filled == wanted && n < wanted + 1 {
                        // Short read at exactly the listed size: the end of the file.
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(ReadError::Unreadable(e.to_string())),
            }
        };
        match result {
            Ok(()) if filled == wanted => {
                buf.truncate(start + wanted);
                Ok(())
            }
            Ok(()) => {
                buf.truncate(start);
                Err(ReadError::Changed {
                    read: filled as u64,
                })
            }
            Err(e) => {
                buf.truncate(start);
                Err(e)
            }
        }
    }

    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError> {
        File::open(self.path(rel))
            .map(|f| Box::new(f) as Box<dyn Read + Send>)
            .map_err(open_error)
    }

    fn open_at(&self, rel: &str, offset: u64) -> Result<Box<dyn Read + Send>, ReadError> {
        let mut file = File::open(self.path(rel)).map_err(open_error)?;
        if offset > 0 {
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| ReadError::Unreadable(e.to_string()))?;
        }
        Ok(Box::new(file))
    }

    /// Walks the tree itself, stopping at the first refused file; directories reached
    /// through symlinks are not followed (as [`InputSource::list`] does not).
    fn every_file(&self, test: &dyn Fn(&str) -> Option<bool>) -> bool {
        if let Some(given) = &self.files_from {
            let rels = || {
                given
                    .lines()
                    .map(|line| files_from::Given::parse(line).rel)
                    .filter(|rel| !rel.is_empty())
            };
            return rels().all(|rel| test(rel) != Some(false))
                && rels().any(|rel| test(rel) == Some(true));
        }
        let mut seen = false;
        self.every_below(&self.root, "", test, &mut seen) && seen
    }

    fn open_ranged(&self, rel: &str) -> Result<Arc<dyn RangeRead>, ReadError> {
        let file = File::open(self.path(rel)).map_err(open_error)?;
        let file = LocalFile::new(file).map_err(|e| ReadError::Unreadable(e.to_string()))?;
        Ok(Arc::new(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_from_checks_every_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/a.txt"), "aa").unwrap();
        let tree = LocalTree::new(dir.path())
            .with_files("./d/a.txt\nd/a.txt\n../x.txt\nmissing.txt\nd\n\n".into());
        let listing = tree.list().unwrap();
        assert_eq!(
            listing.files,
            vec![ListedFile {
                rel: "d/a.txt".into(),
                size: 2
            }]
        );
        let reasons: Vec<(&str, &str)> = listing
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.as_str()))
            .collect();
        // In path order (the pack summary and manifest sort them anyway).
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert_eq!(reasons[0].0, "../x.txt");
        assert!(reasons[0].1.contains("plain relative"));
        assert_eq!(reasons[1].0, "d");
        assert!(reasons[1].1.contains("directory"));
        assert_eq!(reasons[2].0, "d/a.txt");
        assert!(reasons[2].1.contains("more than once"));
        assert_eq!(reasons[3].0, "missing.txt");
        assert!(reasons[3].1.contains("does not exist"));
    }

    #[test]
    fn read_into_detects_size_changes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.bin"), b"12345").unwrap();
        let tree = LocalTree::new(dir.path());
        let mut buf = b"xx".to_vec();
        tree.read_into("f.bin", 5, &mut buf).unwrap();
        assert_eq!(buf, b"xx12345");
        assert!(matches!(
            tree.read_into("f.bin", 4, &mut buf),
            Err(ReadError::Changed { read: 5 })
        ));
        assert!(matches!(
            tree.read_into("f.bin", 6, &mut buf),
            Err(ReadError::Changed { read: 5 })
        ));
        assert!(matches!(
            tree.read_into("nope", 1, &mut buf),
            Err(ReadError::Vanished)
        ));
        assert_eq!(buf, b"xx12345");
    }
}
