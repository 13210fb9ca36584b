//! Where `pack` reads raw files from. A local directory tree today; an object store can
//! implement [`InputSource`] without any format noticing.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use shardsmith_manifest::walk;
use shardsmith_manifest::{Skipped, TEMP_PREFIX};

use crate::{Error, Result};

/// One raw input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// Path relative to the input root, `/`-separated, UTF-8.
    pub rel: String,
    /// Size when listed.
    pub size: u64,
}

/// The files an input offers, and those it had to leave out.
#[derive(Clone, Debug, Default)]
pub struct InputListing {
    /// Files, in a deterministic order.
    pub files: Vec<InputFile>,
    /// Entries left out, with the reason.
    pub skipped: Vec<Skipped>,
}

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The file cannot be opened or read (permissions, vanished, I/O error): the sample
    /// is skipped, or the run fails under `--strict`.
    Unreadable(String),
    /// The file's size differs from the listing: the input is being modified.
    Changed {
        /// Bytes actually available (a lower bound when the file grew).
        read: u64,
    },
}

/// A source of raw input files.
pub trait InputSource: Sync {
    /// Human description (the root path or URL) for messages.
    fn describe(&self) -> String;
    /// Lists every input file. Only a failure to list the root is an error.
    fn list(&self) -> Result<InputListing>;
    /// Appends exactly `size` bytes of `rel` to `buf`, checking the size did not change.
    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError>;
    /// Opens `rel` for streaming (large files).
    fn open(&self, rel: &str) -> Result<Box<dyn Read + Send>, ReadError>;
}

/// A directory tree on the local file system, optionally restricted to a list of
/// relative paths (`--files-from`).
pub struct LocalTree {
    root: PathBuf,
    files_from: Option<Vec<String>>,
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

    /// Only the listed relative paths (one per entry, in any order).
    pub fn with_files(mut self, files: Vec<String>) -> Self {
        self.files_from = Some(files);
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

    fn list_given(&self, given: &[String]) -> Result<InputListing> {
        let meta =
            std::fs::metadata(&self.root).map_err(|e| Error::io("reading", &self.root, e))?;
        if !meta.is_dir() {
            return Err(Error::io(
                "reading",
                &self.root,
                io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        let mut checked: Vec<(String, Option<String>)> = Vec::with_capacity(given.len());
        for line in given {
            let rel = line.trim_start_matches("./").to_string();
            if rel.is_empty() {
                continue;
            }
            let bad = Path::new(&rel).is_absolute()
                || rel
                    .split('/')
                    .any(|part| part.is_empty() || part == "." || part == "..");
            if bad {
                checked.push((
                    rel,
                    Some("is not a plain relative path inside INPUT".into()),
                ));
            } else if !seen.insert(rel.clone()) {
                checked.push((rel, Some("is listed more than once in --files-from".into())));
            } else {
                checked.push((rel, None));
            }
        }
        let results: Vec<std::result::Result<InputFile, Skipped>> = checked
            .into_par_iter()
            .map(|(rel, problem)| {
                if let Some(reason) = problem {
                    return Err(Skipped { path: rel, reason });
                }
                let skip = |reason: String| Skipped {
                    path: rel.clone(),
                    reason,
                };
                match std::fs::symlink_metadata(self.path(&rel)) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        Err(skip("is listed in --files-from but does not exist".into()))
                    }
                    Err(e) => Err(skip(format!("cannot be examined: {e}"))),
                    Ok(m) if m.is_file() => Ok(InputFile {
                        size: m.len(),
                        rel: rel.clone(),
                    }),
                    Ok(m) if m.is_symlink() => match std::fs::metadata(self.path(&rel)) {
                        Ok(t) if t.is_file() => Ok(InputFile {
                            size: t.len(),
                            rel: rel.clone(),
                        }),
                        Ok(t) if t.is_dir() => {
                            Err(skip("symlink to a directory (not followed)".into()))
                        }
                        Ok(_) => Err(skip(
                            "symlink to something that is not a regular file".into(),
                        )),
                        Err(e) => Err(skip(format!("broken symlink: {e}"))),
                    },
                    Ok(m) if m.is_dir() => {
                        Err(skip("is a directory; --files-from lists files".into()))
                    }
                    Ok(_) => Err(skip("not a regular file (socket, FIFO or device)".into())),
                }
            })
            .collect();
        let mut listing = InputListing::default();
        for result in results {
            match result {
                Ok(file) => listing.files.push(file),
                Err(skip) => listing.skipped.push(skip),
            }
        }
        listing.files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(listing)
    }
}

impl InputSource for LocalTree {
    fn describe(&self) -> String {
        self.root.display().to_string()
    }

    fn list(&self) -> Result<InputListing> {
        if let Some(given) = &self.files_from {
            return self.list_given(given);
        }
        let exclude = self.exclude.as_deref();
        let walked = walk::walk(&self.root, &|rel, _| {
            Some(rel) != exclude
                && !rel
                    .file_name()
                    .is_some_and(|n| n.as_encoded_bytes().starts_with(TEMP_PREFIX.as_bytes()))
        })?;
        let mut listing = InputListing::default();
        listing.files.reserve_exact(walked.files.len());
        for file in walked.files {
            // On Unix the walk's relative path is already `/`-separated: reuse its buffer.
            match file.rel.into_os_string().into_string() {
                Ok(rel) => listing.files.push(InputFile {
                    rel,
                    size: file.size,
                }),
                Err(raw) => listing.skipped.push(Skipped {
                    path: raw.to_string_lossy().into_owned(),
                    reason: "name is not valid UTF-8: webdataset and wids need UTF-8 member names"
                        .into(),
                }),
            }
        }
        for skip in walked.skipped {
            listing.skipped.push(Skipped {
                path: skip.rel.to_string_lossy().into_owned(),
                reason: skip.reason,
            });
        }
        Ok(listing)
    }

    fn read_into(&self, rel: &str, size: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
        let mut file =
            File::open(self.path(rel)).map_err(|e| ReadError::Unreadable(e.to_string()))?;
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
            .map_err(|e| ReadError::Unreadable(e.to_string()))
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
        let tree = LocalTree::new(dir.path()).with_files(
            ["./d/a.txt", "d/a.txt", "../x.txt", "missing.txt", "d", ""]
                .map(String::from)
                .to_vec(),
        );
        let listing = tree.list().unwrap();
        assert_eq!(
            listing.files,
            vec![InputFile {
                rel: "d/a.txt".into(),
                size: 2
            }]
        );
        let reasons: Vec<(&str, &str)> = listing
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons[0].1.contains("more than once"));
        assert!(reasons[1].1.contains("plain relative"));
        assert!(reasons[2].1.contains("does not exist"));
        assert!(reasons[3].1.contains("directory"));
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
            Err(ReadError::Unreadable(_))
        ));
        assert_eq!(buf, b"xx12345");
    }
}
