//! A tree of files reached through a listing rather than the local file system (an
//! object store prefix): the one view through which `verify` checks a remote dataset
//! and `audit` surveys a remote run directory. The store crate implements it for its
//! object store trees.

use std::io::{self, Read};

use crate::Result;

/// A tree of files reached through something other than the local file system.
pub trait ListedTree: Sync {
    /// The tree as named (a URL), for messages.
    fn display(&self) -> String;
    /// Its files with their sizes, `/`-separated, without its own `manifest.json` and
    /// `SHA256SUMS`.
    fn files(&self) -> Result<Vec<(String, u64)>>;
    /// The bytes of a small file (the manifest, `SHA256SUMS`), `None` when absent; a
    /// failure of the place itself is [`crate::Error::Source`], with its kind.
    fn read_small(&self, rel: &str) -> Result<Option<Vec<u8>>>;
    /// Streams one file.
    fn open(&self, rel: &str) -> io::Result<Box<dyn Read + Send>>;
    /// The first `n` bytes of file `rel` (`n` at most its listed size). By default read
    /// from [`ListedTree::open`]; a store that serves byte ranges asks for those alone.
    fn head(&self, rel: &str, n: u64) -> io::Result<Vec<u8>> {
        let mut head = Vec::with_capacity(n as usize);
        self.open(rel)?.take(n).read_to_end(&mut head)?;
        Ok(head)
    }
}
