//! How a store client is configured: from the variables each ecosystem already uses
//! (`AWS_*`, `GOOGLE_*`, `AZURE_*`, read by `object_store`'s own builders), then the
//! `--storage-option KEY=VALUE` overrides, then the retry policy. Also the redaction of
//! secrets from every message.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::client::ClientConfigKey;
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ObjectStore, RetryConfig};
use tokio::sync::Semaphore;

use super::remote::{Remote, explain, redact};
use super::watch::{Limits, OnRetry, Watched};
use crate::{Error, Result};

/// Settings shared by every object store location of a run.
#[derive(Clone)]
pub struct StorageOptions {
    /// `KEY=VALUE` pairs given with `--storage-option`, in `object_store`'s key names
    /// (`aws_endpoint`, `azure_storage_account_key`, `google_service_account`, …); they
    /// override the environment.
    pub options: Vec<(String, String)>,
    /// Requests in flight at once per location.
    pub io_concurrency: usize,
    /// Retries of a failed request (throttling, 5xx, connection reset) before the run
    /// fails; with exponential backoff and jitter.
    pub retries: usize,
    /// The longest a store may fail every request (no answer, refused connections,
    /// server errors) before the run gives up on it; also the longest one request is
    /// retried.
    pub timeout: Duration,
    /// Told of every request that failed and is tried again.
    pub on_retry: Option<OnRetry>,
}

impl std::fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageOptions")
            .field("options", &self.options.len())
            .field("io_concurrency", &self.io_concurrency)
            .field("retries", &self.retries)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Requests in flight by default: S3 answers a small GET in tens of milliseconds, so
/// throughput on many small objects comes from many requests at once.
pub const DEFAULT_IO_CONCURRENCY: usize = 64;
/// Retries by default (object_store's own default).
pub const DEFAULT_RETRIES: usize = 10;
/// The first wait before a retry, and the least of every later one.
pub const INIT_BACKOFF: Duration = Duration::from_millis(500);
/// How long a store may fail every request before the run gives up, by default.
pub const DEFAULT_STORAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest one attempt waits for an answer (object_store's own default).
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for StorageOptions {
    fn default() -> Self {
        Self {
            options: Vec::new(),
            io_concurrency: DEFAULT_IO_CONCURRENCY,
            retries: DEFAULT_RETRIES,
            timeout: DEFAULT_STORAGE_TIMEOUT,
            on_retry: None,
        }
    }
}

/// How to give credentials for `scheme`, for the "no credentials" message.
pub(super) fn how_to_give(scheme: &str) -> &'static str {
    match scheme {
        "gs" => {
            "Set GOOGLE_APPLICATION_CREDENTIALS=/path/to/key.json (or pass --storage-option google_service_account=/path/to/key.json); for a public bucket, pass --storage-option google_skip_signature=true."
        }
        "s3" | "s3a" => {
            "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or pass --storage-option aws_access_key_id=… --storage-option aws_secret_access_key=…); for a public bucket, pass --storage-option aws_skip_signature=true."
        }
        _ => {
            "Set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY (or pass them as --storage-option azure_storage_account_key=…); for a public container, pass --storage-option azure_skip_signature=true."
        }
    }
}

/// The variables looked for, per scheme, for the "missing credentials" message.
pub(super) fn variables(scheme: &str) -> &'static str {
    match scheme {
        "gs" => {
            "GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_APPLICATION_CREDENTIALS"
        }
        "s3" | "s3a" => {
            "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP (or instance credentials)"
        }
        _ => {
            "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_USE_EMULATOR"
        }
    }
}

/// Names whose values are secrets, in the environment or among the options.
fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    ["SECRET", "KEY", "TOKEN", "SAS", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|w| name.contains(w))
        && !name.ends_with("KEY_ID")
}

fn secrets(options: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            ["AWS_", "AZURE_", "GOOGLE_"]
                .iter()
                .any(|p| k.starts_with(p))
                && is_secret_name(k)
        })
        .map(|(_, v)| v)
        .chain(
            options
                .iter()
                .filter(|(k, _)| is_secret_name(k))
                .map(|(_, v)| v.clone()),
        )
        .filter(|v| v.len() >= 4)
        .collect();
    // Longest first, so that a secret containing another is replaced whole.
    out.sort_by_key(|v| std::cmp::Reverse(v.len()));
    out.dedup();
    out
}

/// The `--storage-option` pairs with their keys parsed as one store's configuration
/// keys; `unknown` is the error for a key that store does not have.
fn option_keys<'a, K: std::str::FromStr<Err = object_store::Error>>(
    options: &'a [(String, String)],
    unknown: &dyn Fn(&str, object_store::Error) -> Error,
) -> Result<Vec<(K, &'a str)>> {
    options
        .iter()
        .map(|(key, value)| {
            let parsed = key
                .to_ascii_lowercase()
                .parse()
                .map_err(|e| unknown(key, e))?;
            Ok((parsed, value.as_str()))
        })
        .collect()
}

/// The client for `text` (a URL with a known object store scheme).
pub(super) fn connect(text: &str, options: &StorageOptions) -> Result<Remote> {
    let url = url::Url::parse(text).map_err(|e| Error::Location {
        url: text.to_string(),
        message: format!("not a valid URL: {e}"),
    })?;
    let scheme = url.scheme().to_ascii_lowercase();
    let secrets = secrets(&options.options);
    let attempt = ATTEMPT_TIMEOUT
        .min(options.timeout)
        .max(Duration::from_millis(100));
    let setup = Setup {
        text,
        options,
        secrets: &secrets,
        attempt,
        // Ours first, so that a `--storage-option timeout=…` given by the user wins.
        attempt_text: format!("{}ms", attempt.as_millis()),
        scheme,
    };
    let scheme = setup.scheme.as_str();
    let host = url.host_str().unwrap_or_default().to_string();
    if host.is_empty() {
        return Err(setup.bad(format!(
            "no bucket or container: write {scheme}://BUCKET/PREFIX"
        )));
    }
    let mut metadata: Vec<String> = super::watch::METADATA_HOSTS
        .iter()
        .map(ToString::to_string)
        .collect();
    // The bucket-level URL: the prefix is ours to apply, so one client serves all keys.
    let store: Arc<dyn ObjectStore> = match scheme {
        "s3" | "s3a" => setup.s3(&mut metadata)?,
        "gs" => setup.google(&metadata)?,
        _ => setup.azure(&metadata)?,
    };
    let (base, prefix) = match scheme {
        // abfss://container@account.dfs.core.windows.net/prefix
        "abfs" | "abfss" => (
            format!("{scheme}://{}", url.authority()),
            url.path().to_string(),
        ),
        _ => (format!("{scheme}://{host}"), url.path().to_string()),
    };
    let prefix = ObjectPath::from_url_path(prefix.trim_matches('/'))
        .map_err(|e| setup.bad(format!("not a valid object key prefix: {e}")))?;
    let io_concurrency = options.io_concurrency.max(1);
    Ok(Remote {
        store,
        prefix,
        base: redact(&base, &secrets),
        secrets,
        metadata,
        limit: Arc::new(Semaphore::new(io_concurrency)),
        io_concurrency,
    })
}

/// What every scheme's client is built from: the URL, the run's settings, the secrets
/// to keep out of messages and the per-attempt timeout.
struct Setup<'a> {
    text: &'a str,
    scheme: String,
    options: &'a StorageOptions,
    secrets: &'a [String],
    attempt: Duration,
    /// `attempt` as a client configuration value.
    attempt_text: String,
}

impl Setup<'_> {
    /// An error about this location, with the secrets taken out.
    fn bad(&self, message: String) -> Error {
        Error::Location {
            url: redact(self.text, self.secrets),
            message: redact(&message, self.secrets),
        }
    }

    /// The `--storage-option` pairs as this store's configuration keys.
    fn keys<K: std::str::FromStr<Err = object_store::Error>>(&self) -> Result<Vec<(K, &str)>> {
        let scheme = &self.scheme;
        option_keys(
            &self.options.options,
            &|key: &str, e: object_store::Error| {
                self.bad(format!(
                    "--storage-option `{key}` is not a {scheme} option ({})",
                    explain(&e)
                ))
            },
        )
    }

    /// A client that cannot be built lacks configuration: say where it was looked for.
    fn unbuilt(&self, e: object_store::Error) -> Error {
        self.bad(format!(
            "{} (looked for {})",
            explain(&e),
            variables(&self.scheme)
        ))
    }

    /// object_store's backoff is decorrelated jitter: the first wait is `init_backoff`
    /// and every later one is drawn from [init, 2 × the previous], so N retries wait at
    /// least N × init. With 100 ms (object_store's default) ten retries could all be
    /// spent within about a second of a restarting server refusing connections; with
    /// 500 ms they span five seconds at the very least, and typically a minute.
    fn retry(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: INIT_BACKOFF,
                max_backoff: Duration::from_secs(15),
                base: 2.0,
            },
            max_retries: self.options.retries,
            retry_timeout: self.options.timeout,
        }
    }

    fn watched(&self, metadata: &[String]) -> Watched {
        Watched::new(
            Limits {
                timeout: self.options.timeout,
                attempt: self.attempt,
            },
            self.options.on_retry.clone(),
            metadata.to_vec(),
        )
    }

    /// An S3 client; a configured metadata endpoint joins `metadata`.
    fn s3(&self, metadata: &mut Vec<String>) -> Result<Arc<dyn ObjectStore>> {
        let mut builder = AmazonS3Builder::from_env().with_url(self.text).with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
            &self.attempt_text,
        );
        for (key, value) in self.keys::<AmazonS3ConfigKey>()? {
            builder = builder.with_config(key, value);
        }
        if let Some(endpoint) = builder.get_config_value(&AmazonS3ConfigKey::MetadataEndpoint)
            && let Ok(url) = url::Url::parse(&endpoint)
            && let Some(host) = url.host_str()
        {
            metadata.push(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_string(),
            });
        }
        Ok(Arc::new(
            builder
                .with_retry(self.retry())
                .with_http_connector(self.watched(metadata))
                .build()
                .map_err(|e| self.unbuilt(e))?,
        ))
    }

    fn google(&self, metadata: &[String]) -> Result<Arc<dyn ObjectStore>> {
        let mut builder = GoogleCloudStorageBuilder::from_env()
            .with_url(self.text)
            .with_config(
                GoogleConfigKey::Client(ClientConfigKey::Timeout),
                &self.attempt_text,
            );
        if let Ok(path) = std::env::var("GOOGLE_APPLICATION_CREDENTIALS") {
            builder = builder.with_application_credentials(path);
        }
        for (key, value) in self.keys::<GoogleConfigKey>()? {
            builder = builder.with_config(key, value);
        }
        Ok(Arc::new(
            builder
                .with_retry(self.retry())
                .with_http_connector(self.watched(metadata))
                .build()
                .map_err(|e| self.unbuilt(e))?,
        ))
    }

    fn azure(&self, metadata: &[String]) -> Result<Arc<dyn ObjectStore>> {
        let mut builder = MicrosoftAzureBuilder::from_env()
            .with_url(self.text)
            .with_config(
                AzureConfigKey::Client(ClientConfigKey::Timeout),
                &self.attempt_text,
            );
        for (key, value) in self.keys::<AzureConfigKey>()? {
            builder = builder.with_config(key, value);
        }
        Ok(Arc::new(
            builder
                .with_retry(self.retry())
                .with_http_connector(self.watched(metadata))
                .build()
                .map_err(|e| self.unbuilt(e))?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_raw_and_encoded() {
        let secrets = vec!["ab+c/d==".to_string()];
        assert_eq!(
            redact("key ab+c/d== and ab%2Bc%2Fd%3D%3D", &secrets),
            "key *** and ***"
        );
        assert!(is_secret_name("AWS_SECRET_ACCESS_KEY"));
        assert!(is_secret_name("azure_storage_sas_key"));
        assert!(!is_secret_name("AWS_ACCESS_KEY_ID"));
        assert!(!is_secret_name("AWS_REGION"));
    }

    #[test]
    fn unknown_options_and_buckets_are_refused() {
        let options = StorageOptions {
            options: vec![("aws_no_such_thing".into(), "1".into())],
            ..StorageOptions::default()
        };
        let err = connect("s3://bucket/p", &options).unwrap_err().to_string();
        assert!(err.contains("aws_no_such_thing"), "{err}");
        let err = connect("s3:///nobucket", &StorageOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no bucket"), "{err}");
    }
}
