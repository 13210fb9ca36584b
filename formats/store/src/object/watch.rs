//! Every HTTP request a store client makes goes through [`Watched`], which sees each
//! attempt of `object_store`'s retry layer. It keeps the store's health, one streak of
//! failures with no success between them, and uses it to:
//!
//! - say on stderr (through [`StorageOptions::on_retry`](super::StorageOptions)) what is
//!   being retried, so a wait on storage is never silent;
//! - give up on a server that refuses every connection after [`REFUSED_FOR`], rather
//!   than spending every retry on it;
//! - bound the whole wait: once the store has failed every request for the storage
//!   timeout, no request is retried again, and an attempt made during a streak gets only
//!   what is left of it (a server that accepts connections and never answers is given up
//!   on in that time, not in `retries × 30 s`);
//! - name, in the final error, how long the store failed and how, in place of the
//!   client's internals ([`GaveUp`]).
//!
//! Requests to an instance metadata service (credentials) are not watched: they are not
//! the store, and they fail on every machine that is not a cloud instance.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpService, ReqwestConnector,
};

/// How long a server may refuse every connection (a restart) before the run gives up
/// on it.
pub const REFUSED_FOR: Duration = Duration::from_secs(5);

/// What is reported each time a request failed and will be tried again.
#[derive(Clone, Debug)]
pub struct Retry {
    /// `GET`, `PUT`, ….
    pub method: String,
    /// The request's URL, without its query (which may hold a signature).
    pub url: String,
    /// Why it failed, in words (`connection refused`, `503 Service Unavailable`).
    pub cause: String,
    /// How long the store has failed every request.
    pub failing_for: Duration,
    /// How much longer it is waited for at most.
    pub gives_up_in: Duration,
}

impl std::fmt::Display for Retry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}; retrying (failing for {:.1} s, giving up in {:.0} s at most)",
            self.method,
            self.url,
            self.cause,
            self.failing_for.as_secs_f64(),
            self.gives_up_in.as_secs_f64().ceil()
        )
    }
}

/// Called for every retried request (from the I/O runtime's threads).
pub type OnRetry = Arc<dyn Fn(&Retry) + Send + Sync>;

/// The error a request ends with once the store has failed for too long: not retried by
/// `object_store`, and what [`super::remote::explain`] shows.
#[derive(Debug, thiserror::Error)]
#[error("{what} for {:.1} s ({attempts} failed attempts); gave up: {advice}", failing_for.as_secs_f64())]
pub struct GaveUp {
    /// The last failure, in words, with the server.
    pub what: String,
    /// What to check or change.
    pub advice: String,
    /// How long the store had failed every request.
    pub failing_for: Duration,
    /// Attempts that failed in that time (all requests together).
    pub attempts: u64,
}

/// A request that no retry can help, in words with what to do (not retried).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

/// The store's health: the current streak of failures.
#[derive(Debug, Default)]
struct Streak {
    /// When the first failed attempt of the streak started.
    since: Option<Instant>,
    /// When the first refused connection of an unbroken run of refusals started.
    refused_since: Option<Instant>,
    attempts: u64,
}

/// The limits a watched client keeps.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The longest a store may fail every request before the run gives up.
    pub timeout: Duration,
    /// The longest one attempt may go without an answer when the store is healthy.
    pub attempt: Duration,
}

/// A connector that builds `object_store`'s own reqwest client and watches it.
pub struct Watched {
    metadata: Arc<Vec<String>>,
    health: Arc<Mutex<Streak>>,
    limits: Limits,
    on_retry: Option<OnRetry>,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Watched {
    /// `metadata`: the `host[:port]`s of the instance metadata services, not watched.
    pub fn new(limits: Limits, on_retry: Option<OnRetry>, metadata: Vec<String>) -> Self {
        Self {
            metadata: Arc::new(metadata),
            health: Arc::default(),
            limits,
            on_retry,
        }
    }
}

impl HttpConnector for Watched {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        // reqwest's TLS takes the process's default rustls provider: ring (see the
        // workspace Cargo.toml). Installing fails only when one is already installed,
        // by us or by a program embedding this crate, and that one is then used.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Service {
            inner,
            metadata: self.metadata.clone(),
            health: self.health.clone(),
            limits: self.limits.clone(),
            on_retry: self.on_retry.clone(),
        }))
    }
}

struct Service {
    inner: HttpClient,
    metadata: Arc<Vec<String>>,
    health: Arc<Mutex<Streak>>,
    limits: Limits,
    on_retry: Option<OnRetry>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watched")
    }
}

/// The hosts of the cloud instance metadata services (credentials).
pub const METADATA_HOSTS: &[&str] = &[
    "169.254.169.254",
    "169.254.170.2",
    "metadata.google.internal",
    "fd00:ec2::254",
];

/// The error's text with all its causes.
fn chain_text(e: &HttpError) -> String {
    let mut text = String::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        text.push_str(&err.to_string());
        text.push_str(": ");
        source = err.source();
    }
    text
}

/// A server certificate that TLS refused (`chain`: the error's [`chain_text`]), in words with what to do (not retried: no
/// retry makes it trusted); `None` for any other failure.
fn untrusted_certificate(chain: &str, url: &str) -> Option<Unusable> {
    // The rustls error arrives wrapped by hyper and reqwest; its text is what stays:
    // "invalid peer certificate: UnknownIssuer".
    let why = chain
        .split("invalid peer certificate: ")
        .nth(1)?
        .split(": ")
        .next()?;
    Some(Unusable(format!(
        "{} presented a TLS certificate that is not trusted ({why}): add the CA that signed it to the system's trust store or name its PEM file in SSL_CERT_FILE; for a test server only, --storage-option allow_invalid_certificates=true",
        host_of(url)
    )))
}

/// What a failed attempt was, in words, and whether it was a refused connection.
fn cause_of(e: &HttpError) -> (String, bool) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => ("connection refused".into(), true),
                std::io::ErrorKind::TimedOut => ("no answer in time".into(), false),
                std::io::ErrorKind::ConnectionReset => ("connection reset".into(), false),
                _ => (io.to_string(), false),
            };
        }
        source = err.source();
    }
    match e.kind() {
        HttpErrorKind::Timeout => ("no answer in time".into(), false),
        HttpErrorKind::Connect => ("could not connect".into(), false),
        HttpErrorKind::Interrupted => ("the connection was cut".into(), false),
        _ => (e.to_string(), false),
    }
}

impl Service {
    /// What is left of the wait when the store is failing, `None` when it is healthy.
    fn remaining(&self) -> Option<Duration> {
        let streak = self.health.lock().unwrap();
        streak
            .since
            .map(|since| self.limits.timeout.saturating_sub(since.elapsed()))
    }

    /// Records a failed attempt started at `start`; returns the error to end the request
    /// with when the wait is over, or reports the retry.
    fn failed(
        &self,
        start: Instant,
        method: &str,
        url: &str,
        cause: String,
        refused: bool,
    ) -> Option<GaveUp> {
        let (failing_for, refused_for, attempts) = {
            let mut streak = self.health.lock().unwrap();
            let since = *streak.since.get_or_insert(start);
            streak.since = Some(since.min(start));
            streak.attempts += 1;
            if refused {
                let r = *streak.refused_since.get_or_insert(start);
                streak.refused_since = Some(r.min(start));
            } else {
                streak.refused_since = None;
            }
            (
                streak.since.unwrap().elapsed(),
                streak.refused_since.map(|r| r.elapsed()),
                streak.attempts,
            )
        };
        let host = host_of(url);
        if refused_for.is_some_and(|r| r >= REFUSED_FOR) {
            return Some(GaveUp {
                what: format!("{host} refused every connection"),
                advice: "is the endpoint right and the server up?".into(),
                failing_for: refused_for.unwrap_or(failing_for),
                attempts,
            });
        }
        if failing_for >= self.limits.timeout {
            return Some(GaveUp {
                what: format!("{host} failed every request ({cause})"),
                advice: format!(
                    "the store did not recover within --storage-timeout ({} s); pass a larger one to wait longer",
                    self.limits.timeout.as_secs_f64()
                ),
                failing_for,
                attempts,
            });
        }
        if let Some(on_retry) = &self.on_retry {
            let gives_up_in = if refused {
                REFUSED_FOR.saturating_sub(refused_for.unwrap_or_default())
            } else {
                self.limits.timeout.saturating_sub(failing_for)
            };
            on_retry(&Retry {
                method: method.to_string(),
                url: url.to_string(),
                cause,
                failing_for,
                gives_up_in,
            });
        }
        None
    }

    fn succeeded(&self) {
        let mut streak = self.health.lock().unwrap();
        *streak = Streak::default();
    }

    async fn watch(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let uri = req.uri();
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
        if self.metadata.iter().any(|m| m == host || m == authority) {
            return self.inner.execute(req).await;
        }
        let method = req.method().to_string();
        let url = format!(
            "{}://{}{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map(|a| a.as_str()).unwrap_or_default(),
            uri.path()
        );
        let start = Instant::now();
        // During a streak an attempt gets only what is left of the wait.
        let bound = self.remaining().map(|left| left.min(self.limits.attempt));
        let result = match bound {
            Some(left) => match tokio::time::timeout(left, self.inner.execute(req)).await {
                Ok(result) => result,
                Err(_) => Err(HttpError::new(
                    HttpErrorKind::Timeout,
                    std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer"),
                )),
            },
            None => self.inner.execute(req).await,
        };
        let (cause, refused) = match &result {
            Ok(response) => {
                let status = response.status();
                if !(status.is_server_error() || status.as_u16() == 429) {
                    self.succeeded();
                    return result;
                }
                (status.to_string(), false)
            }
            Err(e) => {
                let chain = chain_text(e);
                if let Some(unusable) = untrusted_certificate(&chain, &url) {
                    return Err(HttpError::new(HttpErrorKind::Unknown, unusable));
                }
                if chain.contains("URL scheme is not allowed") {
                    return Err(HttpError::new(
                        HttpErrorKind::Unknown,
                        Unusable(format!(
                            "{} is plain http://, which is refused unless allowed: set AWS_ALLOW_HTTP=true, or pass --storage-option allow_http=true",
                            host_of(&url)
                        )),
                    ));
                }
                cause_of(e)
            }
        };
        match self.failed(start, &method, &url, cause, refused) {
            Some(gave_up) => Err(HttpError::new(HttpErrorKind::Unknown, gave_up)),
            None => result,
        }
    }
}

/// `scheme://host:port` of a URL.
fn host_of(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => &url[..after + i],
        None => url,
    }
}

impl HttpService for Service {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
    {
        Box::pin(self.watch(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_cut_from_urls() {
        assert_eq!(host_of("http://127.0.0.1:9/b/k"), "http://127.0.0.1:9");
        assert_eq!(
            host_of("https://s3.amazonaws.com"),
            "https://s3.amazonaws.com"
        );
        assert!(METADATA_HOSTS.contains(&"169.254.169.254"));
    }
}
