//! A list of input files given by the user (`--files-from`): one path relative to the
//! input per line, or `PATH<TAB>SIZE` (as `shardsmith list` and `find -printf
//! '%P\t%s\n'` write it). A size given is taken as it is instead of being asked of the
//! file system (a `stat` per file) or the store (a listing of the prefix): that is what
//! every task of a split run would otherwise repeat. It is not trusted blindly: the read
//! checks it, and a file of another size, or gone, stops the run as a changed input.

use rayon::prelude::*;
use shardsmith_manifest::Skipped;

use crate::source::{InputListing, ListedFile};

/// One line of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Given<'a> {
    /// The path relative to the input.
    pub rel: &'a str,
    /// Its size in bytes, when the line gives it.
    pub size: Option<u64>,
}

impl<'a> Given<'a> {
    /// Reads one line: `PATH`, or `PATH<TAB>SIZE` when what follows the last tab is a
    /// decimal number (a name with a tab in it is listed with its size).
    pub fn parse(line: &'a str) -> Self {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some((rel, size)) = line.rsplit_once('\t')
            && !size.is_empty()
            && size.bytes().all(|b| b.is_ascii_digit())
            && let Ok(size) = size.parse()
        {
            return Self {
                rel: trim(rel),
                size: Some(size),
            };
        }
        Self {
            rel: trim(line),
            size: None,
        }
    }
}

fn trim(rel: &str) -> &str {
    rel.trim_start_matches("./")
}

/// The lines of a list, empty ones dropped, sorted by path (repeats become neighbours,
/// and the listing comes out in order with one allocation per packed name: the list
/// itself is borrowed, never copied line by line).
pub fn sorted(list: &str) -> Vec<Given<'_>> {
    let mut given: Vec<Given<'_>> = list
        .lines()
        .map(Given::parse)
        .filter(|g| !g.rel.is_empty())
        .collect();
    given.par_sort_unstable_by(|a, b| a.rel.cmp(b.rel));
    given
}

/// Why a line of the list is left out of the listing; the Display is the skip reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeftOut {
    /// An absolute path, or one with empty, `.` or `..` parts.
    #[error("is not a plain relative path inside INPUT")]
    NotRelative,
    /// The same path on an earlier line.
    #[error("is listed more than once in --files-from")]
    Repeated,
    /// No file of that name.
    #[error("is listed in --files-from but does not exist")]
    Missing,
    /// The file system would not say what it is.
    #[error("cannot be examined: {0}")]
    Unexaminable(std::io::Error),
    /// A symlink to a directory.
    #[error("symlink to a directory (not followed)")]
    SymlinkToDirectory,
    /// A symlink to a socket, FIFO or device.
    #[error("symlink to something that is not a regular file")]
    SymlinkToSpecial,
    /// A symlink whose target cannot be read.
    #[error("broken symlink: {0}")]
    BrokenSymlink(std::io::Error),
    /// A directory.
    #[error("is a directory; --files-from lists files")]
    Directory,
    /// A socket, FIFO or device.
    #[error("not a regular file (socket, FIFO or device)")]
    Special,
    /// No size on the line where every line must give one.
    #[error("no size given")]
    NoSize,
}

/// Whether `rel` cannot name a file inside the input.
fn bad_path(rel: &str) -> bool {
    rel.starts_with('/')
        || rel
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
}

/// The listing of the given files: a size the line gives is kept, `size_of` is asked
/// for the others (in parallel); repeated, unusable and refused entries are left out
/// with the reason.
pub fn listing(
    given: &[Given<'_>],
    size_of: &(dyn Fn(&str) -> Result<u64, LeftOut> + Sync),
) -> InputListing {
    let verdicts: Vec<Result<u64, LeftOut>> = given
        .par_iter()
        .enumerate()
        .map(|(i, g)| {
            if bad_path(g.rel) {
                return Err(LeftOut::NotRelative);
            }
            if i > 0 && given[i - 1].rel == g.rel {
                return Err(LeftOut::Repeated);
            }
            match g.size {
                Some(size) => Ok(size),
                None => size_of(g.rel),
            }
        })
        .collect();
    let mut listing = InputListing::default();
    listing
        .files
        .reserve_exact(verdicts.iter().filter(|v| v.is_ok()).count());
    for (g, verdict) in given.iter().zip(verdicts) {
        match verdict {
            Ok(size) => listing.files.push(ListedFile {
                rel: g.rel.to_string(),
                size,
            }),
            Err(reason) => listing.skipped.push(Skipped {
                path: g.rel.to_string(),
                reason: reason.to_string(),
            }),
        }
    }
    listing
}

/// A listing written as a list `--files-from` reads back: `PATH<TAB>SIZE` lines.
pub fn render(files: &[ListedFile]) -> String {
    let mut out = String::with_capacity(files.iter().map(|f| f.rel.len() + 12).sum());
    for f in files {
        out.push_str(&f.rel);
        out.push('\t');
        out.push_str(&f.size.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_with_and_without_sizes() {
        assert_eq!(
            Given::parse("a/b.jpg\t123"),
            Given {
                rel: "a/b.jpg",
                size: Some(123)
            }
        );
        assert_eq!(
            Given::parse("./a/b.jpg\r"),
            Given {
                rel: "a/b.jpg",
                size: None
            }
        );
        // A tab in a name: the size follows the last tab.
        assert_eq!(
            Given::parse("odd\tname.txt\t7"),
            Given {
                rel: "odd\tname.txt",
                size: Some(7)
            }
        );
        // Not a number after the tab: all of it is the name.
        assert_eq!(Given::parse("x\t1e3").size, None);
        assert_eq!(Given::parse("x\t").size, None);
        assert_eq!(Given::parse("x\t99999999999999999999999").size, None);
    }

    #[test]
    fn sizes_given_are_kept_the_rest_asked_and_bad_lines_left_out() {
        let given = sorted("b\t5\na\r\nb\t5\n../up\t1\n\nc\n");
        let asked = std::sync::Mutex::new(Vec::new());
        let listing = listing(&given, &|rel| {
            asked.lock().unwrap().push(rel.to_string());
            if rel == "a" {
                Ok(9)
            } else {
                Err(LeftOut::Missing)
            }
        });
        let mut asked = asked.into_inner().unwrap();
        asked.sort();
        assert_eq!(asked, ["a", "c"], "only lines without a size are asked");
        assert_eq!(
            listing.files,
            [("a", 9), ("b", 5)].map(|(rel, size)| ListedFile {
                rel: rel.into(),
                size
            })
        );
        let skipped: Vec<(&str, &str)> = listing
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("../up", "is not a plain relative path inside INPUT"),
                ("b", "is listed more than once in --files-from"),
                ("c", "is listed in --files-from but does not exist"),
            ]
        );
        let round: Vec<String> = render(&listing.files).lines().map(String::from).collect();
        assert_eq!(round, ["a\t9", "b\t5"]);
    }
}
