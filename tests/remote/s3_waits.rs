//! Waits on object storage are bounded and said: a refused endpoint is given up on in
//! seconds, a server that never answers within `--storage-timeout`, every retry is a
//! line on stderr, missing credentials are named with what to set, and a store that
//! fails during a pack leaves a hint that the same command resumes.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::remote::s3::{S3, local_pack};
use crate::util::*;

/// The binary aimed at an S3 endpoint on 127.0.0.1:`port`, with credentials.
fn aimed_at(port: u16) -> assert_cmd::Command {
    let mut cmd = cmd();
    cmd.env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "key")
        .env("AWS_SECRET_ACCESS_KEY", "secret-value");
    cmd
}

fn report(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

#[test]
fn a_refused_endpoint_is_given_up_on_in_seconds_and_every_retry_is_said() {
    let port = free_port();
    let started = Instant::now();
    let o = aimed_at(port)
        .args(["verify", "s3://bkt/data", "--json"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let r = report(&o);
    assert_eq!(r["error"]["kind"], "storage", "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "reading `s3://bkt/data/manifest.json`: http://127.0.0.1:{port} refused every connection for "
        )) && message.ends_with("; gave up: is the endpoint right and the server up?"),
        "{message}"
    );
    assert!(
        !message.contains("max_retries") && !message.contains("os error"),
        "{message}"
    );
    // Refusals are waited on for 5 s (a restart), not for ten retries of backoff.
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(12),
        "{took:?}"
    );
    let stderr = text(&o.stderr);
    assert!(
        stderr.starts_with(&format!(
            "storage: GET http://127.0.0.1:{port}/bkt/data/manifest.json: connection refused; retrying (failing for 0.0 s, giving up in 5 s at most)\n"
        )),
        "{stderr}"
    );
    // --retries 0: the first refusal ends it.
    let started = Instant::now();
    let o = aimed_at(port)
        .args(["--retries", "0", "verify", "s3://bkt/data"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(3));
    // --quiet: no retry lines, the error still.
    let o = aimed_at(port)
        .args(["--retries", "1", "-q", "verify", "s3://bkt/data"])
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert!(
        !stderr.contains("retrying") && stderr.starts_with("error: reading"),
        "{stderr}"
    );
}

#[test]
fn a_server_that_never_answers_is_given_up_on_within_the_storage_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and never says a word.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.push(conn);
        }
    });
    let started = Instant::now();
    let o = aimed_at(port)
        .args([
            "--storage-timeout",
            "3",
            "verify",
            "s3://bkt/data",
            "--json",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let r = report(&o);
    assert_eq!(r["error"]["kind"], "storage", "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "http://127.0.0.1:{port} failed every request (no answer in time) for 3."
        )) && message.ends_with(
            "gave up: the store did not recover within --storage-timeout (3 s); pass a larger one to wait longer"
        ),
        "{message}"
    );
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(10),
        "{took:?}"
    );
    let o = cmd()
        .args(["--storage-timeout", "0", "verify", "s3://bkt/data"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--storage-timeout must be a number of seconds above 0"),
        "{}",
        text(&o.stderr)
    );
}

/// An instance metadata service that refuses every request, as one does for a machine
/// that is no cloud instance of the account (or a proxy that denies it).
fn refusing_metadata_service() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(
                b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[test]
fn missing_credentials_are_named_with_what_to_set_and_one_kind_in_every_command() {
    let metadata = refusing_metadata_service();
    let store = free_port();
    let input = corpus(3, 100);
    let dest = Tree::new();
    let commands: Vec<Vec<String>> = vec![
        vec!["verify".into(), "s3://bkt/d".into()],
        vec!["audit".into(), "s3://bkt/d".into()],
        vec!["manifest".into(), "s3://bkt/d".into()],
        vec!["stage".into(), "s3://bkt/d".into(), dest.s("staged")],
        vec![
            "pack".into(),
            input.path().to_str().unwrap().into(),
            "s3://bkt/d".into(),
        ],
    ];
    for args in commands {
        let o = cmd()
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE")
            .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{store}"))
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env(
                "AWS_METADATA_ENDPOINT",
                format!("http://127.0.0.1:{metadata}"),
            )
            .args(&args)
            .arg("--json")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        let r = report(&o);
        assert_eq!(r["error"]["kind"], "credentials", "{args:?}: {r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            "`s3://bkt/d`: no credentials: none were given, and this machine's instance metadata service gave none (it answered 403 Forbidden). Looked for AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP (or instance credentials). Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or pass --storage-option aws_access_key_id=… --storage-option aws_secret_access_key=…); for a public bucket, pass --storage-option aws_skip_signature=true.",
            "{args:?}"
        );
        assert_eq!(r["error"]["path"], "s3://bkt/d", "{args:?}");
    }
}

#[test]
fn a_plain_http_endpoint_that_is_not_allowed_says_how_to_allow_it() {
    let o = aimed_at(free_port())
        .env_remove("AWS_ALLOW_HTTP")
        .args(["verify", "s3://bkt/d"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("is plain http://, which is refused unless allowed: set AWS_ALLOW_HTTP=true, or pass --storage-option allow_http=true")
            && !stderr.contains("retrying"),
        "{stderr}"
    );
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_store_that_dies_during_a_pack_leaves_a_resume_hint_and_the_same_command_finishes() {
    let Some(mut s3) = S3::start() else { return };
    let bucket = s3.bucket("dies");
    let input = corpus(300, 40_000);
    let args = ["--shard-size", "256KiB", "-j", "1"];
    let want = local_pack(input.path(), &args);
    let pack: Vec<&str> = [
        &["pack", input.path().to_str().unwrap(), "s3://dies/wds"][..],
        &args,
        &["--json"],
    ]
    .concat();
    let child = std::process::Command::new(bin())
        .args(&pack)
        .envs(s3.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !bucket.join("wds/shard-000001.tar").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Down for longer than refusals are waited on: the pack fails.
    s3.kill_and_restart(Duration::from_secs(9));
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let r = report(&o);
    assert_eq!(r["error"]["kind"], "storage", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused every connection"),
        "{r}"
    );
    assert_eq!(
        r["error"]["hint"],
        "once the store answers again, the same command resumes from the shards this run finished in `s3://dies/wds` (their state is kept there); to start over, add --force",
        "{r}"
    );
    assert!(text(&o.stderr).contains("connection refused; retrying"));
    // The server is back: the same command resumes and ends byte-identical.
    let o = s3.run(&pack);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = report(&o);
    assert!(r["shards_resumed"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(snapshot(&bucket.join("wds")), want);
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_S3S_FS (tests/setup.sh)"]
fn a_tokenize_whose_store_dies_is_unfinished_until_the_same_command_resumes_it() {
    let Some(mut s3) = S3::start() else { return };
    let bucket = s3.bucket("toks");
    let t = Tree::new();
    let docs: Vec<String> = (0..6000)
        .map(|i| crate::tokenize::basic::words(i, 300))
        .collect();
    t.file("corpus.jsonl", crate::tokenize::basic::jsonl(&docs));
    let opts = [
        "-t",
        "gpt2",
        "--format",
        "megatron",
        "--shard-tokens",
        "20k",
        "-j",
        "1",
    ];
    let corpus = t.s("corpus.jsonl");
    let local_dir = t.s("local");
    let local = [
        &["tokenize", corpus.as_str(), local_dir.as_str()][..],
        &opts,
    ]
    .concat();
    assert_eq!(run(&local).status.code(), Some(0));
    let url = "s3://toks/gpt2";
    let remote: Vec<&str> = [&["tokenize", corpus.as_str(), url][..], &opts, &["--json"]].concat();
    let child = std::process::Command::new(bin())
        .args(&remote)
        .envs(s3.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let idx = || {
        std::fs::read_dir(bucket.join("gpt2")).map_or(0, |d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".idx"))
                .count()
        })
    };
    while idx() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    s3.kill_and_restart(Duration::from_secs(9));
    let o = child.wait_with_output().unwrap();
    if o.status.code() == Some(0) {
        // Finished before the server went down: nothing to learn from this run.
        eprintln!("tokenize finished before the kill");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let r = report(&o);
    assert_eq!(r["error"]["kind"], "storage", "{r}");
    assert!(
        r["error"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("the same command resumes")),
        "{r}"
    );
    // Back up: the prefix is an unfinished run for verify, stage and manifest.
    let (code, r) = s3.json(&["verify", url]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["findings"][0]["kind"], "unfinished_run", "{r}");
    let dst = Tree::new();
    let (code, r) = s3.json(&["stage", url, &dst.s("copy")]);
    assert_eq!(
        (code, r["error"]["kind"].as_str()),
        (2, Some("unfinished_run"))
    );
    let (code, r) = s3.json(&["manifest", url]);
    assert_eq!(
        (code, r["error"]["kind"].as_str()),
        (2, Some("unfinished_run"))
    );
    // The same command finishes it, byte-identical to a run that was never cut.
    let o = s3.run(&remote);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(snapshot(&bucket.join("gpt2")), snapshot(&t.join("local")));
    let (code, r) = s3.json(&["verify", url]);
    assert_eq!(code, 0, "{r}");
}
