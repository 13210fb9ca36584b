//! `audit` of a run directory in an object store. A checkpoint with a `manifest.json` is
//! verified in place against it (each object read once, several at a time, as `verify
//! s3://...` does). One without is copied to a scratch directory on local disk, one
//! checkpoint at a time, and verified there with every format check: the findings are
//! those the same checkpoint gets on disk. Each copy is deleted once checked.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use shardsmith_checkpoint::audit::{CheckpointCheck, verify_options};
use shardsmith_manifest::verify::{VerifyReport, verify_listed};
use shardsmith_manifest::{Error, InspectorFactory, MANIFEST_FILE, Result, verify::verify_path};
use shardsmith_store::{InputSource, ObjectTree};

/// A training run under an object store prefix.
pub struct RemoteRun<'a> {
    pub tree: ObjectTree,
    pub scratch: &'a Path,
    pub inspectors: &'a (dyn InspectorFactory + Sync),
    /// Bytes copied to the scratch directory.
    pub copied: AtomicU64,
    /// Checkpoints copied to the scratch directory.
    pub copies: AtomicU64,
}

impl RemoteRun<'_> {
    /// Copies object `key` (relative to the run) to `dest`, checking its listed size.
    fn copy(
        &self,
        key: &str,
        size: u64,
        dest: &Path,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        let url = self.tree.remote().url(key);
        let mut reader =
            InputSource::open(&self.tree, key).map_err(|e| Error::io("reading", &url, e.into()))?;
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("creating", parent, e))?;
        }
        let mut file = File::create(dest).map_err(|e| Error::io("creating", dest, e))?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("reading", &url, e)),
            };
            file.write_all(&buf[..n])
                .map_err(|e| Error::io("writing", dest, e))?;
            total += n as u64;
            progress(n as u64);
        }
        if total != size {
            return Err(Error::io(
                "reading",
                &url,
                io::Error::other(format!(
                    "the object changed during the audit: listed with {size} bytes, {total} read"
                )),
            ));
        }
        self.copied.fetch_add(total, Ordering::Relaxed);
        Ok(())
    }
}

/// Each checkpoint verified in place against its manifest, or copied to the scratch
/// directory and verified there with every format check.
impl CheckpointCheck for RemoteRun<'_> {
    fn check(
        &self,
        name: &str,
        dir: bool,
        files: &[(String, u64)],
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<VerifyReport> {
        if dir && files.iter().any(|(rel, _)| rel == MANIFEST_FILE) {
            let sub = ObjectTree::new(Arc::new(self.tree.remote().child(name)));
            let concurrency = sub.remote().io_concurrency().min(32);
            return verify_listed(
                &sub,
                &verify_options(self.inspectors),
                concurrency,
                &|_| {},
                progress,
            );
        }
        let tmp = Scratch::new(self.scratch)?;
        let local = tmp.0.join(name);
        files.par_iter().try_for_each(|(rel, size)| {
            if dir {
                self.copy(&format!("{name}/{rel}"), *size, &local.join(rel), progress)
            } else {
                self.copy(name, *size, &local, progress)
            }
        })?;
        self.copies.fetch_add(1, Ordering::Relaxed);
        verify_path(&local, &verify_options(self.inspectors), &|_| {}, &|_| {})
    }
}

/// A directory of its own in the scratch directory, deleted when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(parent: &Path) -> Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!(".shardsmith-audit-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
