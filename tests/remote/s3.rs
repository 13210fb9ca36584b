//! Object storage against a real S3 server: `s3s-fs` (S3 over a directory), started per
//! test on 127.0.0.1 on a free port with an access key pair, stopped after. The server's
//! backing directory is the bucket's content, so what the binary wrote is compared byte
//! for byte with what the same command writes to local disk, and damage is done to it
//! directly. tests/run_all.sh installs the server (cached under $HOME/.cache) and sets
//! SHARDSMITH_S3S_FS.

use std::path::{Path, PathBuf};
use std::process::{Child, Output};
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const KEY_ID: &str = "AKIDSHARDSMITHTEST";
const SECRET: &str = "s3cr3t+Shardsmith/Test==";

/// A running s3s-fs server over a temporary directory.
pub struct S3 {
    child: Child,
    root: Tree,
    pub port: u16,
    bin: PathBuf,
}

impl S3 {
    /// Starts the server, or `None` (test not run) when SHARDSMITH_S3S_FS is not set
    /// outside CI.
    pub fn start() -> Option<Self> {
        let bin = server_bin("SHARDSMITH_S3S_FS", "S3 server")?;
        let root = Tree::new();
        let port = free_port();
        let child = Self::spawn(&bin, root.path(), port);
        Some(Self {
            child,
            root,
            port,
            bin,
        })
    }

    fn spawn(bin: &Path, root: &Path, port: u16) -> Child {
        let child = std::process::Command::new(bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", KEY_ID, "--secret-key", SECRET])
            .arg(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("s3s-fs starts");
        wait_listening(port, "s3s-fs", 20);
        child
    }

    /// Kills the server (SIGKILL), waits `down`, and starts it again on the same port
    /// over the same directory.
    pub fn kill_and_restart(&mut self, down: Duration) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        std::thread::sleep(down);
        self.child = Self::spawn(&self.bin, self.root.path(), self.port);
    }

    /// Creates bucket `name` (a directory of the server's root) and returns its path.
    pub fn bucket(&self, name: &str) -> PathBuf {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The binary, configured for this server through the standard AWS variables.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = cmd();
        for (k, v) in self.env() {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", KEY_ID.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
            (
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", self.port),
            ),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Runs the binary with `args` (`--json` added) and returns the exit code and report.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.run(&[args, &["--json"]].concat());
        let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
            panic!(
                "{args:?}: no JSON report\n{}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
        (out.status.code().unwrap_or(-1), report)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Packs `input` with `args` to local disk and returns what was written.
pub fn local_pack(input: &Path, args: &[&str]) -> std::collections::BTreeMap<String, Vec<u8>> {
    let out = Tree::new();
    let o = run(&[&["pack", input.to_str().unwrap(), &out.s("d")], args].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    snapshot(&out.join("d"))
}
