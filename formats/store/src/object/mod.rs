//! Object stores (S3 and S3-compatible servers, Google Cloud Storage, Azure Blob Storage)
//! behind the same synchronous [`InputSource`](crate::InputSource) and
//! [`OutputSink`](crate::OutputSink) traits the formats already read and write through.
//!
//! The async runtime that `object_store` needs lives here and nowhere else: one
//! process-wide tokio runtime ([`runtime`]) on which every request runs, entered with
//! `block_on` from the synchronous callers (rayon workers, the committer). Requests are
//! bounded by one semaphore per location (`--io-concurrency`), retried with exponential
//! backoff and jitter by `object_store`'s retry layer (`--retries`), and every message
//! that leaves this module has the configured secrets removed ([`Remote::redact`]).

mod config;
mod lease;
mod remote;
mod sink;
mod source;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;

pub use config::{DEFAULT_STORAGE_TIMEOUT, StorageOptions};
pub use remote::{Remote, runtime};
pub use sink::ObjectDir;
pub use source::ObjectTree;
pub use watch::{OnRetry, REFUSED_FOR, Retry};

use crate::{Error, Result};

/// Where a command reads or writes: a local path, or a prefix in an object store.
#[derive(Clone, Debug)]
pub enum Location {
    /// A local file or directory (a plain path or a `file://` URL).
    Local(PathBuf),
    /// A bucket or container and a prefix in it.
    Remote(Arc<Remote>),
}

/// The URL schemes an object store location may have.
pub const SCHEMES: &[&str] = &["s3", "s3a", "gs", "az", "azure", "abfs", "abfss"];

impl Location {
    /// Parses `text`: `s3://bucket/prefix`, `gs://…`, `az://container/prefix`,
    /// `abfs[s]://…`, `file:///path`, or a plain path. Builds the store client from the
    /// environment and `options` (no request is made yet).
    pub fn parse(text: &str, options: &StorageOptions) -> Result<Self> {
        let Some((scheme, _)) = text.split_once("://") else {
            return Ok(Location::Local(PathBuf::from(text)));
        };
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            let url = url::Url::parse(text).map_err(|e| Error::Location {
                url: text.to_string(),
                message: format!("not a valid file URL: {e}"),
            })?;
            let path = url.to_file_path().map_err(|()| Error::Location {
                url: text.to_string(),
                message: "a file URL needs an absolute path: file:///data/corpus".into(),
            })?;
            return Ok(Location::Local(path));
        }
        if !SCHEMES.contains(&scheme.as_str()) {
            return Err(Error::Location {
                url: text.to_string(),
                message: format!(
                    "unknown scheme `{scheme}://`: use s3://, gs://, az:// (or abfs[s]://), file:// or a local path"
                ),
            });
        }
        Ok(Location::Remote(Arc::new(config::connect(text, options)?)))
    }

    /// True when `text` names an object store location rather than a local path.
    pub fn is_remote(text: &str) -> bool {
        text.split_once("://")
            .is_some_and(|(s, _)| SCHEMES.contains(&s.to_ascii_lowercase().as_str()))
    }

    /// How the location is shown in messages and reports (secrets never included).
    pub fn display(&self) -> String {
        match self {
            Location::Local(path) => path.display().to_string(),
            Location::Remote(remote) => remote.url(""),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_told_by_scheme() {
        let options = StorageOptions::default();
        let err = Location::parse("ftp://x/y", &options)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown scheme `ftp://`"), "{err}");
        assert!(matches!(
            Location::parse("file:///data/x", &options).unwrap(),
            Location::Local(p) if p == std::path::Path::new("/data/x")
        ));
        assert!(matches!(
            Location::parse("data/x", &options).unwrap(),
            Location::Local(_)
        ));
        assert!(Location::is_remote("S3://bucket/p") && !Location::is_remote("dir/s3:"));
        let remote = Location::parse("s3://bucket/a/b", &options).unwrap();
        assert_eq!(remote.display(), "s3://bucket/a/b");
        let Location::Remote(remote) = remote else {
            panic!("s3 is remote")
        };
        assert_eq!(remote.url("x/{0..1}.tar"), "s3://bucket/a/b/x/{0..1}.tar");
    }
}
