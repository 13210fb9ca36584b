//! An object store prefix as an [`OutputSink`]. A store has no rename, so the commit
//! protocol is the request itself: an object exists only once complete, as one PUT (up
//! to one part) or a completed multipart upload whose parts were uploaded, a few at a
//! time, while the next bytes were encoded. The resume records and the manifest, written
//! by the same code as on disk, come in the same order: record, shard, manifest last.

use std::collections::VecDeque;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload};
use tokio::task::JoinHandle;

use super::remote::{Remote, is_not_found, runtime};
use crate::sink::{OutputSink, ShardFile};
use crate::{Error, Result};

/// Bytes per uploaded part (S3 wants at least 5 MiB but for the last one).
const PART: usize = 8 << 20;
/// Parts of one object being uploaded at once; memory per writer is about this many
/// parts plus the one being filled.
const PARTS_IN_FLIGHT: usize = 4;

/// The objects under a prefix, written by `pack` and `tokenize`.
pub struct ObjectDir {
    remote: Arc<Remote>,
    /// Set when another run took this run's lease over ([`OutputSink::lock`]): nothing
    /// more is committed.
    lost: Arc<AtomicBool>,
}

impl ObjectDir {
    /// The prefix of `remote` (nothing is created until the first object).
    pub fn new(remote: Arc<Remote>) -> Self {
        Self {
            remote,
            lost: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The location written to.
    pub fn remote(&self) -> &Arc<Remote> {
        &self.remote
    }
}

/// An object being written: bytes buffered up to one part; beyond, a multipart upload.
struct ObjectFile {
    remote: Arc<Remote>,
    lost: Arc<AtomicBool>,
    name: String,
    buf: Vec<u8>,
    upload: Option<Box<dyn MultipartUpload>>,
    parts: VecDeque<JoinHandle<object_store::Result<()>>>,
    done: bool,
}

/// The store's error, carried through the `io::Error` the writers return, so that its
/// kind (`storage`, `credentials`) reaches the report.
fn io_error(remote: &Remote, op: &'static str, name: &str, e: &object_store::Error) -> io::Error {
    io::Error::other(remote.error(op, name, e))
}

impl ObjectFile {
    fn new(dir: &ObjectDir, name: &str) -> Self {
        Self {
            remote: dir.remote.clone(),
            lost: dir.lost.clone(),
            name: name.to_string(),
            buf: Vec::new(),
            upload: None,
            parts: VecDeque::new(),
            done: false,
        }
    }

    /// Starts uploading the buffer as the next part, waiting while too many are in flight.
    fn send_part(&mut self) -> io::Result<()> {
        if self.upload.is_none() {
            let key = self.remote.key(&self.name);
            let store = self.remote.store.clone();
            let upload = self
                .remote
                .run(async move { store.put_multipart(&key).await })
                .map_err(|e| io_error(&self.remote, "starting the upload of", &self.name, &e))?;
            self.upload = Some(upload);
        }
        // The next part's buffer at its full size at once: no reallocation while it fills.
        let part = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(PART)));
        let upload = self.upload.as_mut().expect("started above");
        let sending = upload.put_part(PutPayload::from(part));
        let limit = self.remote.limit.clone();
        self.parts.push_back(runtime().spawn(async move {
            let _permit = limit.acquire_owned().await;
            sending.await
        }));
        while self.parts.len() > PARTS_IN_FLIGHT {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(part) = self.parts.pop_front() else {
            return Ok(());
        };
        match runtime().block_on(part) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(io_error(
                &self.remote,
                "uploading a part of",
                &self.name,
                &e,
            )),
            Err(e) => Err(io::Error::other(format!(
                "uploading a part of `{}`: {e}",
                self.remote.url(&self.name)
            ))),
        }
    }

    fn finish(&mut self, name: &str) -> Result<()> {
        self.done = true;
        if self.lost.load(Ordering::SeqCst) {
            self.abort();
            return Err(Error::OutputConflict {
                dir: self.remote.url(""),
                reason: format!(
                    "was taken over by another shardsmith run while this one wrote it (its lease under `{}` was replaced): `{name}` and the manifest are not written",
                    self.remote.url(&super::lease::lease_name("lock*"))
                ),
            });
        }
        let remote = self.remote.clone();
        let fail = |op: &'static str, e: &object_store::Error| remote.error(op, name, e);
        let Some(mut upload) = self.upload.take() else {
            // Up to one part: a single PUT, which the store applies whole or not at all.
            let key = self.remote.key(name);
            let payload = PutPayload::from(Bytes::from(std::mem::take(&mut self.buf)));
            let store = self.remote.store.clone();
            return self
                .remote
                .run(async move { store.put(&key, payload).await })
                .map(drop)
                .map_err(|e| fail("uploading", &e));
        };
        self.upload = Some(upload);
        if !self.buf.is_empty() {
            self.send_part()
                .map_err(|e| Error::io("uploading", name, e))?;
        }
        while !self.parts.is_empty() {
            if let Err(e) = self.wait_oldest() {
                self.abort();
                return Err(Error::io("uploading", self.remote.url(name), e));
            }
        }
        upload = self.upload.take().expect("still started");
        let completed = runtime().block_on(upload.complete());
        if let Err(e) = completed {
            return Err(self.remote.error("completing the upload of", name, &e));
        }
        if name != self.name {
            // A shard numbered only at commit: the store has no rename, so a server-side
            // copy, then the first name goes.
            let (from, to) = (self.remote.key(&self.name), self.remote.key(name));
            let store = self.remote.store.clone();
            self.remote
                .run(async move {
                    store.copy(&from, &to).await?;
                    store.delete(&from).await
                })
                .map_err(|e| self.remote.error("renaming into place", name, &e))?;
        }
        Ok(())
    }

    fn abort(&mut self) {
        for part in self.parts.drain(..) {
            part.abort();
        }
        if let Some(mut upload) = self.upload.take() {
            let _ = runtime().block_on(upload.abort());
        }
    }
}

impl Write for ObjectFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = PART - self.buf.len();
        let n = room.min(buf.len());
        self.buf.extend_from_slice(&buf[..n]);
        if self.buf.len() == PART {
            self.send_part()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ShardFile for ObjectFile {
    fn commit(mut self: Box<Self>) -> Result<()> {
        let name = self.name.clone();
        self.finish(&name)
    }

    fn commit_as(mut self: Box<Self>, name: &str) -> Result<()> {
        // Not uploading yet: one PUT under the final name, no copy.
        if self.upload.is_none() {
            self.name = name.to_string();
        }
        self.finish(name)
    }

    /// Possible while the object is still one part in memory; an object written in
    /// parts cannot be changed, so a format that rewrites its header creates its file
    /// with [`OutputSink::create_spooled`].
    fn rewrite(
        &mut self,
        offset: u64,
        bytes: &[u8],
        read: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        if self.upload.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an object uploaded in parts cannot be rewritten",
            ));
        }
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start + bytes.len();
        if end > self.buf.len() {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf[start..end].copy_from_slice(bytes);
        read(&self.buf);
        Ok(())
    }
}

impl Drop for ObjectFile {
    fn drop(&mut self) {
        if !self.done {
            self.abort();
        }
    }
}

/// An object written to a local scratch file first and uploaded on commit: for formats
/// that rewrite their header once the end is known (llm.c's token count). One object at
/// a time per writer, never the dataset.
struct SpooledFile {
    file: std::fs::File,
    inner: ObjectFile,
}

impl Write for SpooledFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl SpooledFile {
    fn upload(mut self, name: &str) -> Result<()> {
        let url = self.inner.remote.url(name);
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("reading back", &url, e))?;
        let mut block = vec![0u8; 1 << 20];
        loop {
            let n = self
                .file
                .read(&mut block)
                .map_err(|e| Error::io("reading back", &url, e))?;
            if n == 0 {
                break;
            }
            self.inner
                .write_all(&block[..n])
                .map_err(|e| Error::io("uploading", &url, e))?;
        }
        Box::new(self.inner).commit_as(name)
    }
}

impl ShardFile for SpooledFile {
    fn commit(self: Box<Self>) -> Result<()> {
        let name = self.inner.name.clone();
        self.upload(&name)
    }

    fn commit_as(self: Box<Self>, name: &str) -> Result<()> {
        self.upload(name)
    }

    fn rewrite(
        &mut self,
        offset: u64,
        bytes: &[u8],
        read: &mut dyn FnMut(&[u8]),
    ) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.write_all(bytes)?;
        self.file.seek(SeekFrom::Start(0))?;
        let mut block = vec![0u8; 1 << 20];
        loop {
            match self.file.read(&mut block) {
                Ok(0) => break,
                Ok(n) => read(&block[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.file.seek(SeekFrom::End(0))?;
        Ok(())
    }
}

impl OutputSink for ObjectDir {
    fn describe(&self) -> String {
        self.remote.url("")
    }

    fn create(&self, name: &str) -> Result<Box<dyn ShardFile>> {
        Ok(Box::new(ObjectFile::new(self, name)))
    }

    fn create_spooled(&self, name: &str) -> Result<Box<dyn ShardFile>> {
        let file = self.scratch()?;
        Ok(Box::new(SpooledFile {
            file,
            inner: ObjectFile::new(self, name),
        }))
    }

    fn size(&self, name: &str) -> Result<Option<u64>> {
        let key = self.remote.key(name);
        match self.remote.run(self.remote.store.head(&key)) {
            Ok(meta) => Ok(Some(meta.size)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(self.remote.error("examining", name, &e)),
        }
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.remote
            .get_small(name)
            .map_err(|e| self.remote.error("reading", name, &e))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let key = self.remote.key(name);
        let store = self.remote.store.clone();
        let result = self.remote.run(async move {
            // The object itself, if there is one, and everything below it (a
            // "directory" of state).
            let mut keys: Vec<ObjectPath> = store
                .list(Some(&key))
                .map(|m| m.map(|m| m.location))
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<object_store::Result<_>>()?;
            // A prefix with objects below is not also an object; otherwise the object is
            // looked for in its parent's listing (some S3 servers over a file system
            // answer HEAD or DELETE of an emptied "directory" with an error).
            if keys.is_empty() {
                let parts: Vec<_> = key.parts().collect();
                let parent =
                    ObjectPath::from_iter(parts[..parts.len().saturating_sub(1)].iter().cloned());
                let parent = (!parent.as_ref().is_empty()).then_some(parent);
                let listed = store.list_with_delimiter(parent.as_ref()).await?;
                if listed.objects.iter().any(|m| m.location == key) {
                    keys.push(key);
                }
            }
            for key in keys {
                match store.delete(&key).await {
                    Ok(()) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        });
        result.map_err(|e| self.remote.error("removing", name, &e))
    }

    fn list(&self) -> Result<Vec<String>> {
        let key = self.remote.key("");
        let prefix = (!key.as_ref().is_empty()).then_some(key);
        let store = self.remote.store.clone();
        let listed = self
            .remote
            .run(async move { store.list_with_delimiter(prefix.as_ref()).await })
            .map_err(|e| self.remote.error("listing", "", &e))?;
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|m| m.location.filename().map(str::to_string))
            .chain(
                listed
                    .common_prefixes
                    .iter()
                    .filter_map(|p| p.filename().map(str::to_string)),
            )
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// A lease object under the prefix (see [`super::lease`]).
    fn lock_named(&self, tag: &str) -> Result<Box<dyn Send>> {
        Ok(Box::new(super::lease::acquire(
            &self.remote,
            self.lost.clone(),
            tag,
        )?))
    }

    fn child(&self, sub: &str) -> Result<Box<dyn OutputSink>> {
        Ok(Box::new(ObjectDir::new(Arc::new(self.remote.child(sub)))))
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (a, b) = (self.remote.key(from), self.remote.key(to));
        let store = self.remote.store.clone();
        // A copy on the server, then the delete: a store has no rename.
        self.remote
            .run(async move { store.rename(&a, &b).await })
            .map_err(|e| self.remote.error("renaming", from, &e))
    }
}
