//! The client of one object store location: its key prefix, request limit and secrets,
//! and the one runtime every request runs on.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::Semaphore;

use crate::Error;

/// A prefix in an object store, with the client that reaches it.
pub struct Remote {
    pub(super) store: Arc<dyn ObjectStore>,
    /// The prefix inside the bucket (may be empty).
    pub(super) prefix: ObjectPath,
    /// `scheme://bucket`, without credentials or query.
    pub(super) base: String,
    /// Values that must never appear in a message.
    pub(super) secrets: Vec<String>,
    /// Bounds the requests in flight (`--io-concurrency`).
    pub(super) limit: Arc<Semaphore>,
    pub(super) io_concurrency: usize,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url(""))
    }
}

impl Remote {
    /// The object key of `rel` (relative to the prefix, `/`-separated).
    pub(super) fn key(&self, rel: &str) -> ObjectPath {
        let mut parts: Vec<_> = self.prefix.parts().collect();
        parts.extend(
            rel.split('/')
                .filter(|p| !p.is_empty())
                .map(object_store::path::PathPart::from),
        );
        ObjectPath::from_iter(parts)
    }

    /// `rel` (relative to the prefix) relative again, from a listed key.
    pub(super) fn rel_of(&self, key: &ObjectPath) -> Option<String> {
        let parts: Vec<String> = key
            .prefix_match(&self.prefix)?
            .map(|p| p.as_ref().to_string())
            .collect();
        Some(parts.join("/"))
    }

    /// The URL of `rel` (the prefix itself when empty), for messages: the names as
    /// written, not percent-encoded.
    pub fn url(&self, rel: &str) -> String {
        let mut url = self.base.clone();
        for part in [self.prefix.as_ref(), rel.trim_matches('/')] {
            if !part.is_empty() {
                url.push('/');
                url.push_str(part);
            }
        }
        url
    }

    /// A location `sub` below this one (`a/b` under `s3://bucket/prefix`).
    pub fn child(&self, sub: &str) -> Remote {
        Remote {
            store: self.store.clone(),
            prefix: self.key(sub),
            base: self.base.clone(),
            secrets: self.secrets.clone(),
            limit: self.limit.clone(),
            io_concurrency: self.io_concurrency,
        }
    }

    /// How many requests may be in flight at once.
    pub fn io_concurrency(&self) -> usize {
        self.io_concurrency
    }

    /// `text` with every configured secret replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// The error for a failed request about `rel`.
    pub(super) fn error(&self, op: &'static str, rel: &str, e: &object_store::Error) -> Error {
        Error::Remote {
            op,
            url: self.url(rel),
            message: self.redact(&explain(e)),
        }
    }

    /// The whole content of a small object `rel`, `None` when absent.
    pub(super) fn get_small(&self, rel: &str) -> object_store::Result<Option<Vec<u8>>> {
        let key = self.key(rel);
        let store = self.store.clone();
        let got = self.run(async move {
            let got = store.get(&key).await?;
            got.bytes().await
        });
        match got {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Runs `future` on the runtime, holding one of the location's request permits.
    pub(super) fn run<F: Future>(&self, future: F) -> F::Output {
        let limit = self.limit.clone();
        runtime().block_on(async move {
            let _permit = limit.acquire_owned().await.expect("never closed");
            future.await
        })
    }
}

/// The one runtime every object store request runs on. Two worker threads: the work is
/// waiting on the network, and the CPU belongs to encoding and hashing.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("shardsmith-io")
            .enable_all()
            .build()
            .expect("the I/O runtime starts")
    })
}

/// True when an object store error means the object is not there.
pub(super) fn is_not_found(e: &object_store::Error) -> bool {
    matches!(e, object_store::Error::NotFound { .. })
}

/// `text` with every secret (raw or percent-encoded) replaced by `***`.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        out = out.replace(secret.as_str(), "***");
        let encoded: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
        if encoded != *secret {
            out = out.replace(encoded.as_str(), "***");
        }
    }
    out
}

/// A one-line explanation of an object store error, with its causes.
pub(crate) fn explain(e: &object_store::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
