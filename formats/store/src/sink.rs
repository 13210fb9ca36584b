//! Where `pack` writes. A local directory today; an object store can implement
//! [`OutputSink`] (upload on commit, manifest last) without any format noticing.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use shardsmith_manifest::TEMP_PREFIX;

use crate::{Error, Result};

/// An object being written; it becomes visible under its final name only on
/// [`ShardFile::commit`]. Dropping it uncommitted discards it.
pub trait ShardFile: Write + Send {
    /// Makes the content durable and visible under the name it was created for.
    fn commit(self: Box<Self>) -> Result<()>;

    /// Makes the content durable and visible under `name` (relative to the sink, like
    /// the name it was created for): for a shard whose number is decided only once the
    /// shards planned before it are written.
    fn commit_as(self: Box<Self>, name: &str) -> Result<()>;

    /// Overwrites `bytes` at `offset` of what was written, then feeds the whole content
    /// from the start to `read`: for a header that depends on the end of the file (the
    /// token count of an llm.c file), to be hashed again. Sinks that cannot do it say so.
    fn rewrite(
        &mut self,
        _offset: u64,
        _bytes: &[u8],
        _read: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this output cannot rewrite what it wrote",
        ))
    }
}

/// A destination directory for shards, the manifest and resume state. Names are
/// relative, `/`-separated.
pub trait OutputSink: Sync {
    /// Human description (path or URL) for messages.
    fn describe(&self) -> String;
    /// Starts writing `name` under a temporary name.
    fn create(&self, name: &str) -> Result<Box<dyn ShardFile>>;
    /// Starts writing `name` for a format that rewrites part of it at the end
    /// ([`ShardFile::rewrite`]); the default is [`OutputSink::create`], which can.
    fn create_spooled(&self, name: &str) -> Result<Box<dyn ShardFile>> {
        self.create(name)
    }
    /// Size of `name`, or `None` if absent.
    fn size(&self, name: &str) -> Result<Option<u64>>;
    /// Content of a small object, or `None` if absent.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>>;
    /// Writes a small object atomically (temporary name, flush, rename).
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let mut file = self.create(name)?;
        file.write_all(bytes)
            .map_err(|e| Error::io("writing", format!("{}/{name}", self.describe()), e))?;
        file.commit()
    }
    /// Removes an object or a directory of state; absent is fine.
    fn remove(&self, name: &str) -> Result<()>;
    /// Names of the top-level entries.
    fn list(&self) -> Result<Vec<String>>;
    /// Takes an exclusive lock for this run; released when the guard drops.
    fn lock(&self) -> Result<Box<dyn Send>> {
        self.lock_named("lock")
    }
    /// Takes the exclusive lock called `tag` (`lock-task-000003`: one task of a split
    /// run, which other tasks writing into the same output do not contend for).
    fn lock_named(&self, tag: &str) -> Result<Box<dyn Send>>;
    /// Renames a complete object (`from` must exist; `to` is replaced).
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// The directory `sub` of this output, as an output of its own.
    fn child(&self, sub: &str) -> Result<Box<dyn OutputSink>>;
    /// A nameless read-write scratch file for data a writer must read back before it
    /// commits (Megatron's document lengths, read three times to build the index). It
    /// vanishes when dropped, also when the process dies. The default is in the system
    /// temporary directory; an output that has room of its own puts it there.
    fn scratch(&self) -> Result<std::fs::File> {
        tempfile::tempfile()
            .map_err(|e| Error::io("creating a scratch file in", std::env::temp_dir(), e))
    }
}

/// Temporary files and locks this process has open, so that an interrupted run can
/// remove them ([`discard_temporaries`]) before it exits; once it has, no new one is
/// created. Files are created under the lock, so none can appear between the removal
/// and the exit.
struct Live {
    paths: Vec<PathBuf>,
    stopping: bool,
}

static LIVE: std::sync::Mutex<Live> = std::sync::Mutex::new(Live {
    paths: Vec::new(),
    stopping: false,
});

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Creates the temporary file or lock `path` with `open` and tracks it; refused once
/// the process is stopping.
fn create_tracked(path: &Path, open: impl FnOnce() -> io::Result<File>) -> io::Result<File> {
    let mut live = live();
    if live.stopping {
        return Err(io::Error::new(
            io::ErrorKind::Interrupted,
            "the run is stopping: no new file is created",
        ));
    }
    let file = open()?;
    live.paths.push(path.to_path_buf());
    Ok(file)
}

fn untrack(path: &Path) {
    let mut live = live();
    if let Some(i) = live.paths.iter().rposition(|p| p == path) {
        live.paths.swap_remove(i);
    }
}

/// Removes every temporary file and lock of this process's open sinks: for a signal
/// handler, just before the process exits. Finished shards and their records stay, so
/// the same command resumes. No temporary file is created after it. Returns how many
/// were removed.
pub fn discard_temporaries() -> usize {
    let mut live = live();
    live.stopping = true;
    let paths = std::mem::take(&mut live.paths);
    paths.iter().filter(|p| fs::remove_file(p).is_ok()).count()
}

/// A local directory, created if needed. Temporary files are
/// `.shardsmith-tmp-NAME`; commit fsyncs the file, renames it and fsyncs the directory.
pub struct LocalDir {
    dir: PathBuf,
    /// The outermost directory this sink created (`dir` or an ancestor), if any.
    created: Option<PathBuf>,
}

impl LocalDir {
    /// The directory `dir` (created, with parents, if absent).
    pub fn create(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        let created = dir
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && fs::symlink_metadata(a).is_err())
            .last()
            .map(Path::to_path_buf);
        fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        Ok(Self { dir, created })
    }

    /// Removes the directories [`LocalDir::create`] made, if they are still empty: a run
    /// that failed before writing anything leaves no trace.
    pub fn discard_if_unused(&self) {
        let Some(top) = &self.created else {
            return;
        };
        for dir in self.dir.ancestors() {
            if fs::remove_dir(dir).is_err() || dir == top {
                break;
            }
        }
    }

    /// The directory path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn full(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

struct LocalShardFile {
    file: Option<File>,
    writeback: crate::writeback::Writeback,
    temp: PathBuf,
    /// The sink's directory and the name the file was created for.
    root: PathBuf,
    name: String,
}

impl Write for LocalShardFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let file = self.file.as_mut().expect("file is open until commit");
        let n = file.write(buf)?;
        self.writeback.wrote(file, n);
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let file = self.file.as_mut().expect("file is open until commit");
        file.write_all(buf)?;
        self.writeback.wrote(file, buf.len());
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file
            .as_mut()
            .expect("file is open until commit")
            .flush()
    }
}

impl ShardFile for LocalShardFile {
    fn commit(self: Box<Self>) -> Result<()> {
        let name = self.name.clone();
        self.commit_as(&name)
    }

    fn commit_as(mut self: Box<Self>, name: &str) -> Result<()> {
        let file = self.file.take().expect("commit runs once");
        self.writeback.finish();
        file.sync_all()
            .map_err(|e| Error::io("syncing", &self.temp, e))?;
        drop(file);
        let target = self.root.join(name);
        let result = fs::rename(&self.temp, &target)
            .map_err(|e| Error::io("renaming into place", &target, e));
        if result.is_err() {
            let _ = fs::remove_file(&self.temp);
        }
        untrack(&self.temp);
        result?;
        sync_dir(target.parent().unwrap_or(&self.root))
    }

    fn rewrite(
        &mut self,
        offset: u64,
        bytes: &[u8],
        read: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let file = self.file.as_mut().expect("file is open until commit");
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)?;
        file.seek(SeekFrom::Start(0))?;
        let mut block = vec![0u8; 1 << 20];
        loop {
            match file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => read(&block[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Drop for LocalShardFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.temp);
            untrack(&self.temp);
        }
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("syncing directory", dir, e))
}

impl OutputSink for LocalDir {
    fn describe(&self) -> String {
        self.dir.display().to_string()
    }

    fn create(&self, name: &str) -> Result<Box<dyn ShardFile>> {
        let target = self.full(name);
        let dir = target.parent().unwrap_or(&self.dir).to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        let base = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The process id keeps apart the tasks of a split run writing the same small file
        // (`run.json`) at the same moment.
        let temp = dir.join(format!("{TEMP_PREFIX}tmp-{}-{base}", std::process::id()));
        let file = create_tracked(&temp, || {
            fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&temp)
        })
        .map_err(|e| Error::io("creating", &temp, e))?;
        Ok(Box::new(LocalShardFile {
            file: Some(file),
            writeback: crate::writeback::Writeback::default(),
            temp,
            root: self.dir.clone(),
            name: name.to_string(),
        }))
    }

    fn size(&self, name: &str) -> Result<Option<u64>> {
        match fs::metadata(self.full(name)) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("examining", self.full(name), e)),
        }
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        match fs::read(self.full(name)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("reading", self.full(name), e)),
        }
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.full(name);
        let result = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            Ok(_) => fs::remove_file(&path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        result.map_err(|e| Error::io("removing", path, e))
    }

    fn list(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in
            fs::read_dir(&self.dir).map_err(|e| Error::io("reading directory", &self.dir, e))?
        {
            let entry = entry.map_err(|e| Error::io("reading directory", &self.dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// In the output directory itself: the output's filesystem has room for the output,
    /// a small `/tmp` (often memory) may not.
    fn scratch(&self) -> Result<std::fs::File> {
        tempfile::tempfile_in(&self.dir)
            .map_err(|e| Error::io("creating a scratch file in", &self.dir, e))
    }

    fn child(&self, sub: &str) -> Result<Box<dyn OutputSink>> {
        Ok(Box::new(LocalDir::create(self.full(sub))?))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (a, b) = (self.full(from), self.full(to));
        fs::rename(&a, &b).map_err(|e| Error::io("renaming", &a, e))?;
        sync_dir(b.parent().unwrap_or(&self.dir))
    }

    fn lock_named(&self, tag: &str) -> Result<Box<dyn Send>> {
        let path = self.full(&format!("{TEMP_PREFIX}{tag}"));
        let file = File::create(&path).map_err(|e| Error::io("creating", &path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let mut live = live();
                if live.stopping {
                    let _ = file.unlock();
                    return Err(Error::io(
                        "locking",
                        path,
                        io::Error::new(io::ErrorKind::Interrupted, "the run is stopping"),
                    ));
                }
                live.paths.push(path.clone());
                Ok(Box::new(LockGuard { file, path }))
            }
            Err(fs::TryLockError::WouldBlock) => Err(Error::OutputConflict {
                dir: self.describe(),
                reason: format!(
                    "is being written by another shardsmith run (lock `{}` held)",
                    path.display()
                ),
            }),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("locking", path, e)),
        }
    }
}

struct LockGuard {
    file: File,
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        untrack(&self.path);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_appear_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let sink = LocalDir::create(dir.path().join("out")).unwrap();
        let mut f = sink.create("a.tar").unwrap();
        f.write_all(b"data").unwrap();
        assert_eq!(sink.size("a.tar").unwrap(), None);
        assert_eq!(
            sink.list().unwrap(),
            vec![format!(".shardsmith-tmp-{}-a.tar", std::process::id())]
        );
        f.commit().unwrap();
        assert_eq!(sink.size("a.tar").unwrap(), Some(4));
        assert_eq!(sink.list().unwrap(), vec!["a.tar"]);
        let g = sink.create("b.tar").unwrap();
        drop(g);
        assert_eq!(sink.list().unwrap(), vec!["a.tar"]);
        let mut h = sink.create("c.tar").unwrap();
        h.write_all(b"later").unwrap();
        h.commit_as("b.tar").unwrap();
        assert_eq!(sink.list().unwrap(), vec!["a.tar", "b.tar"]);
        sink.rename("b.tar", "d.tar").unwrap();
        assert_eq!(sink.list().unwrap(), vec!["a.tar", "d.tar"]);
        assert_eq!(sink.size("d.tar").unwrap(), Some(5));
        assert_eq!(sink.read("d.tar").unwrap().unwrap(), b"later");
        sink.write_atomic("state/x.json", b"{}").unwrap();
        assert_eq!(sink.read("state/x.json").unwrap().unwrap(), b"{}");
        sink.remove("state").unwrap();
        assert_eq!(sink.read("state/x.json").unwrap(), None);
    }

    #[test]
    fn directories_it_made_go_when_unused() {
        let dir = tempfile::tempdir().unwrap();
        let sink = LocalDir::create(dir.path().join("a/b/c")).unwrap();
        sink.discard_if_unused();
        assert!(!dir.path().join("a").exists(), "a/b/c removed, up to `a`");
        std::fs::create_dir(dir.path().join("kept")).unwrap();
        let sink = LocalDir::create(dir.path().join("kept")).unwrap();
        sink.discard_if_unused();
        assert!(dir.path().join("kept").exists(), "not made by the sink");
        let sink = LocalDir::create(dir.path().join("used")).unwrap();
        sink.write_atomic("x", b"1").unwrap();
        sink.discard_if_unused();
        assert!(dir.path().join("used/x").exists(), "not empty");
    }

    #[test]
    fn second_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sink = LocalDir::create(dir.path()).unwrap();
        let guard = sink.lock().unwrap();
        let err = sink.lock().err().unwrap();
        assert!(err.to_string().contains("another shardsmith run"), "{err}");
        drop(guard);
        sink.lock().unwrap();
    }
}
