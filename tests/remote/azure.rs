//! The same object storage paths against Azure Blob Storage, through Microsoft's own
//! emulator, Azurite (from the npm registry; tests/run_all.sh installs it, cached, and
//! sets SHARDSMITH_AZURITE). Started per test on 127.0.0.1 on a free port.
//! GCS is in tests/remote/gcs.rs.

use std::path::Path;
use std::process::Child;

use serde_json::Value;

use crate::util::*;

struct Azurite {
    child: Child,
    _data: Tree,
    url: String,
}

impl Azurite {
    fn start() -> Option<Self> {
        let bin = server_bin("SHARDSMITH_AZURITE", "Azure emulator")?;
        let data = Tree::new();
        let port = free_port();
        let child = std::process::Command::new(bin)
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            .args(["--silent", "--skipApiVersionCheck", "--location"])
            .arg(data.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("azurite starts");
        wait_listening(port, "azurite", 30);
        Some(Self {
            child,
            _data: data,
            url: format!("http://127.0.0.1:{port}"),
        })
    }

    fn container(&self, name: &str) {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/servers/azurite_container.py");
        let status = std::process::Command::new("python3")
            .arg(script)
            .args([&self.url, name])
            .status()
            .unwrap();
        assert!(status.success(), "container {name} created");
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = cmd()
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", &self.url)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        let report = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{args:?}: {}", text(&out.stderr)));
        (out.status.code().unwrap_or(-1), report)
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs an object store server: SHARDSMITH_AZURITE (tests/setup.sh)"]
fn pack_to_azure_and_stage_back_give_the_bytes_of_a_local_run() {
    let Some(az) = Azurite::start() else { return };
    az.container("shards");
    let input = mds_corpus(40);
    for format in ["webdataset", "mds", "parquet"] {
        let args = ["--format", format, "--shard-size", "16KiB"];
        let local = Tree::new();
        let o = run(&[
            &["pack", input.path().to_str().unwrap(), &local.s("d")][..],
            &args,
        ]
        .concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let url = format!("az://shards/{format}");
        let (code, report) =
            az.json(&[&["pack", input.path().to_str().unwrap(), &url][..], &args].concat());
        assert_eq!(code, 0, "{format}: {report}");
        // Back to disk, verified against the manifest pack wrote to the container.
        let (code, report) = az.json(&["stage", &url, &local.s("staged")]);
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["had_manifest"], true);
        assert_eq!(
            snapshot(&local.join("staged")),
            snapshot(&local.join("d")),
            "{format}: the container holds exactly what a local run writes"
        );
        // And the container as a pack input.
        let (code, report) = az.json(&[
            "pack",
            &url,
            &format!("az://shards/again-{format}"),
            "--format",
            "webdataset",
        ]);
        assert_eq!(code, 0, "{format}: {report}");
    }
}
