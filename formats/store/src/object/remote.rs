//! The client of one object store location: its key prefix, request limit and secrets,
//! and the one runtime every request runs on.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::Semaphore;

use super::watch::{GaveUp, Unusable};
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
    /// The instance metadata endpoints credentials are asked of (`host[:port]`): a
    /// failure naming one is a failure to find credentials.
    pub(super) metadata: Vec<String>,
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
            metadata: self.metadata.clone(),
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
        match self.no_credentials(e) {
            Some(message) => Error::Credentials {
                url: self.url(""),
                message,
            },
            None => Error::Remote {
                op,
                url: self.url(rel),
                message: self.redact(&explain(e)),
            },
        }
    }

    /// A failed request in words, without the client's internals or any secret.
    pub(super) fn explain(&self, e: &object_store::Error) -> String {
        self.no_credentials(e)
            .unwrap_or_else(|| self.redact(&explain(e)))
    }

    /// When `e` is the failure to find credentials (none given, and the instance
    /// metadata service, the last place looked, gave none): what was looked for and how
    /// to give them.
    fn no_credentials(&self, e: &object_store::Error) -> Option<String> {
        let text = chain(e);
        if !self.metadata.iter().any(|m| text.contains(m.as_str())) {
            return None;
        }
        let answer = match text.split_once("status code: ") {
            Some((_, rest)) => format!(
                "it answered {}",
                rest.split(':').next().unwrap_or(rest).trim()
            ),
            None => "it did not answer".to_string(),
        };
        let scheme = self.base.split("://").next().unwrap_or_default();
        Some(format!(
            "no credentials: none were given, and this machine's instance metadata service gave none ({answer}). Looked for {}. {}",
            super::config::variables(scheme),
            super::config::how_to_give(scheme)
        ))
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

/// The error's text with every cause it does not already say.
fn chain(e: &object_store::Error) -> String {
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

/// A one-line explanation of an object store error, with its causes: when the store
/// was given up on, how long it failed and how ([`GaveUp`]); otherwise the client's
/// message without its retry bookkeeping (its own clock is one request's, not the
/// wait the user saw).
pub(crate) fn explain(e: &object_store::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = source {
        if let Some(gave_up) = cause.downcast_ref::<GaveUp>() {
            return gave_up.to_string();
        }
        if let Some(unusable) = cause.downcast_ref::<Unusable>() {
            return unusable.to_string();
        }
        source = cause.source();
    }
    tidy(&chain(e))
}

/// `Generic S3 error: Error performing GET URL in 1.2s, after 3 retries, max_retries:
/// 3, retry_timeout: 60s  - Server returned non-2xx status code: 404 Not Found: <?xml…
/// <Code>NoSuchKey</Code>…` becomes `GET URL (after 3 retries): Server returned non-2xx
/// status code: 404 Not Found: NoSuchKey`.
fn tidy(text: &str) -> String {
    let mut text = text.trim();
    if let Some(rest) = text.strip_prefix("Generic ")
        && let Some((_, after)) = rest.split_once(" error: ")
    {
        text = after;
    }
    let text = text.replace("Error performing ", "");
    let mut out = String::new();
    match text.split_once(" - ") {
        Some((head, tail)) => {
            // head: `GET URL in 1.2s[, after N retries, max_retries: N, retry_timeout: Ns ]`
            let (request, bookkeeping) = match head.rfind(" in ") {
                Some(i) => (&head[..i], &head[i..]),
                None => (head, ""),
            };
            let retries = bookkeeping
                .split_once(", after ")
                .and_then(|(_, r)| r.split(" retries").next())
                .filter(|n| n.chars().all(|c| c.is_ascii_digit()));
            out.push_str(request.trim());
            if let Some(n) = retries {
                out.push_str(&format!(" (after {n} retries)"));
            }
            out.push_str(": ");
            out.push_str(tail.trim());
        }
        None => out.push_str(&text),
    }
    // The XML error body of S3 and Azure: its code and message only.
    if let Some(i) = out.find("<?xml") {
        let between = |open: &str, close: &str| {
            let from = out[i..].find(open)? + i + open.len();
            let to = out[from..].find(close)? + from;
            Some(out[from..to].to_string())
        };
        let mut said = between("<Code>", "</Code>").unwrap_or_default();
        if let Some(message) = between("<Message>", "</Message>") {
            said = format!("{said} ({message})");
        }
        out.truncate(i);
        out.push_str(&said);
    }
    // The HTTP client's chain of wrappers: what happened, once.
    if let Some(i) = out.find("HTTP error: error sending request") {
        let cause = if out.contains("Connection refused") {
            Some("connection refused")
        } else if out.contains("dns error") {
            Some("the host name could not be resolved")
        } else if out.contains("timed out") {
            Some("no answer in time")
        } else {
            None
        };
        if let Some(cause) = cause {
            out.truncate(i);
            out.push_str(cause);
        }
    }
    if out.contains("NoSuchBucket") || out.contains("ContainerNotFound") {
        out = format!("the bucket does not exist: {out}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_retry_bookkeeping_is_left_out() {
        let raw = "Generic S3 error: Error performing GET http://127.0.0.1:1/b/m.json in 12.74252029s, after 10 retries, max_retries: 10, retry_timeout: 300s  - HTTP error: error sending request";
        assert_eq!(
            tidy(raw),
            "GET http://127.0.0.1:1/b/m.json (after 10 retries): HTTP error: error sending request"
        );
        assert_eq!(
            tidy(
                "Error performing PUT http://h/k in 1.2ms - Server returned non-2xx status code: 403 Forbidden: denied"
            ),
            "PUT http://h/k: Server returned non-2xx status code: 403 Forbidden: denied"
        );
        assert_eq!(
            tidy(
                "Generic S3 error: Error performing GET http://h/k in 1ms - HTTP error: error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)"
            ),
            "GET http://h/k: connection refused"
        );
        assert_eq!(
            tidy("Object at location x not found"),
            "Object at location x not found"
        );
        assert_eq!(
            tidy(
                "list request: Error performing GET http://h/nb?list-type=2 in 3ms - Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>"
            ),
            "the bucket does not exist: list request: GET http://h/nb?list-type=2: Server returned non-2xx status code: 404 Not Found: NoSuchBucket (gone)"
        );
    }
}
