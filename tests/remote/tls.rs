//! Object storage over HTTPS: the TLS stack (rustls with ring) verifies the server's
//! certificate against the system's trust store or SSL_CERT_FILE, a certificate it does
//! not trust ends the request at once with what to do, and
//! `allow_invalid_certificates` skips the check. The server (tests/servers/tls_stub.py)
//! answers every request with S3's 404, so a request that reaches it ends in a listing
//! error, not a certificate one.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

struct Stub {
    child: Child,
    out: BufReader<ChildStdout>,
    port: u16,
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../tests/fixtures/tls/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn stub() -> Stub {
    let port = free_port();
    let mut child = Command::new("python3")
        .arg(format!(
            "{}/../tests/servers/tls_stub.py",
            env!("CARGO_MANIFEST_DIR")
        ))
        .arg(port.to_string())
        .args([fixture("cert.pem"), fixture("key.pem")])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/servers/tls_stub.py");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    Stub { child, out, port }
}

/// `verify s3://bkt/data --json` against the stub, with `extra` args and env.
fn verify(stub: &Stub, args: &[&str], env: &[(&str, String)]) -> (Value, String, Duration) {
    let mut cmd = cmd();
    cmd.env(
        "AWS_ENDPOINT_URL",
        format!("https://127.0.0.1:{}", stub.port),
    )
    .env("AWS_REGION", "us-east-1")
    .env("AWS_ACCESS_KEY_ID", "key")
    .env("AWS_SECRET_ACCESS_KEY", "secret-value")
    .env_remove("SSL_CERT_FILE")
    .env_remove("SSL_CERT_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let o = cmd
        .args(args)
        .args(["verify", "s3://bkt/data", "--json"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)));
    (report, text(&o.stderr), took)
}

#[test]
fn a_certificate_the_system_does_not_trust_is_refused_at_once_with_what_to_do() {
    let stub = stub();
    let (r, stderr, took) = verify(&stub, &[], &[]);
    assert_eq!(r["error"]["kind"], "storage", "{r}");
    assert_eq!(
        r["error"]["message"],
        format!(
            "reading `s3://bkt/data/manifest.json`: https://127.0.0.1:{} presented a TLS certificate that is not trusted (UnknownIssuer): add the CA that signed it to the system's trust store or name its PEM file in SSL_CERT_FILE; for a test server only, --storage-option allow_invalid_certificates=true",
            stub.port
        ),
        "{r}"
    );
    // Not retried: no retry makes a certificate trusted.
    assert!(!stderr.contains("retrying"), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_certificate_signed_by_the_ca_in_ssl_cert_file_is_trusted() {
    let mut stub = stub();
    let (r, _, _) = verify(&stub, &[], &[("SSL_CERT_FILE", fixture("ca.pem"))]);
    // The handshake succeeded: the stub's 404 is what ends it.
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("404 Not Found") && !message.contains("certificate"),
        "{r}"
    );
    let mut line = String::new();
    stub.out.read_line(&mut line).unwrap();
    assert_eq!(line, "GET /bkt/data/manifest.json\n");
}

#[test]
fn allow_invalid_certificates_skips_the_check() {
    let stub = stub();
    let (r, _, _) = verify(
        &stub,
        &["--storage-option", "allow_invalid_certificates=true"],
        &[],
    );
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("404 Not Found") && !message.contains("certificate"),
        "{r}"
    );
}
