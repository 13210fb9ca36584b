//! What a new user meets first: `--json` answers even when a command cannot run, the
//! messages of the common mistakes, `merge` part names, the help layout, and the
//! progress bar as a terminal shows it.

use std::path::Path;

use serde_json::Value;

use crate::util::{Tree, cmd, corpus, run, run_json, samples, text};

/// The `error` object of an exit-2 run with `--json`, which must be the only thing on
/// stdout.
fn json_error(args: &[&str]) -> Value {
    let (code, report) = run_json(args);
    assert_eq!(code, 2, "{args:?}: {report}");
    assert_eq!(report["exit_code"], 2, "{report}");
    let error = report["error"].clone();
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{report}"
    );
    error
}

#[test]
fn json_answers_on_every_exit_2_path() {
    let t = Tree::new();
    t.file("empty/.keep", "");
    t.file("key.pem", "not a key");
    let missing = t.s("nosuch");
    let out = t.s("out");
    for (args, kind, command) in [
        (vec!["pack", &missing, &out], "not_found", "pack"),
        (
            vec!["tokenize", &missing, &out, "-t", "gpt2"],
            "not_found",
            "tokenize",
        ),
        (vec!["manifest", &missing], "not_found", "manifest"),
        (vec!["verify", &missing], "not_found", "verify"),
        (vec!["audit", &missing], "not_found", "audit"),
        (
            vec!["sign", &missing, "--private-key", &t.s("key.pem")],
            "not_found",
            "sign",
        ),
    ] {
        let (code, report) = run_json(&args);
        assert_eq!(code, 2, "{args:?}: {report}");
        assert_eq!(report["command"], command);
        assert_eq!(report["error"]["kind"], kind, "{report}");
        assert_eq!(report["error"]["path"], missing.as_str(), "{report}");
        let message = report["error"]["message"].as_str().unwrap();
        assert!(
            message.ends_with(&format!("`{missing}` does not exist")),
            "{report}"
        );
    }
    let key = json_error(&["sign", &t.s("empty"), "--private-key", &t.s("key.pem")]);
    assert_eq!(key["kind"], "key");
    assert_eq!(key["path"], t.s("key.pem").as_str());
    let merge = json_error(&["merge", &t.s("empty")]);
    assert_eq!(merge["kind"], "merge");
    assert!(
        merge["message"]
            .as_str()
            .unwrap()
            .starts_with("no parts to merge")
    );
    // Flags clap refuses: a usage error, still one JSON object on stdout.
    let usage = json_error(&["pack"]);
    assert_eq!(usage["kind"], "usage");
    assert!(
        usage["message"]
            .as_str()
            .unwrap()
            .contains("required arguments"),
        "{usage}"
    );
    let usage = json_error(&["verify", "x", "--no-such-flag"]);
    assert_eq!(usage["kind"], "usage");
    // An output that holds other data: the kind, the path and the way out.
    t.file("busy/notes.txt", "mine");
    let conflict = json_error(&["pack", samples().to_str().unwrap(), &t.s("busy")]);
    assert_eq!(conflict["kind"], "output_conflict", "{conflict}");
    assert_eq!(conflict["path"], t.s("busy").as_str());
    // One kind per cause, whichever command meets it: a manifest that is there already
    // is an output conflict as pack's is; what is not there is not_found.
    t.file("done/a.txt", "a");
    let (code, _) = run_json(&["manifest", &t.s("done")]);
    assert_eq!(code, 0);
    let again = json_error(&["manifest", &t.s("done")]);
    assert_eq!(again["kind"], "output_conflict", "{again}");
    assert_eq!(again["path"], t.s("done/manifest.json").as_str());
    let none = json_error(&["pack", &t.s("shard-{0..1}.tar"), &t.s("out-b")]);
    assert_eq!(none["kind"], "not_found", "{none}");
    let not_mds = json_error(&["pack", &t.s("done"), &t.s("out-m"), "--input-format", "mds"]);
    assert_eq!(not_mds["kind"], "bad_input", "{not_mds}");
    let no_run = json_error(&["audit", &t.s("empty")]);
    assert_eq!(no_run["kind"], "not_found", "{no_run}");
    // Without --json, nothing on stdout.
    let o = run(&["verify", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert_eq!(
        text(&o.stderr),
        format!("error: path `{missing}` does not exist\n")
    );
}

#[test]
fn an_output_that_contains_the_input_is_named_as_such() {
    let t = Tree::new();
    t.file("raw/a.txt", "a");
    let o = cmd()
        .current_dir(t.path())
        .args(["pack", "raw", "."])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        "error: output `.` contains the input `raw`: shards would be written among the files they are made of; choose an output directory that is not a parent of the input\n"
    );
}

#[test]
fn an_os_error_is_said_once() {
    let t = Tree::new();
    let o = run(&[
        "pack",
        samples().to_str().unwrap(),
        &t.s("out"),
        "--files-from",
        &t.s("list.txt"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
}

#[test]
fn an_empty_checkpoint_is_said_to_be_empty_once() {
    let t = Tree::new();
    t.file("model.safetensors", "");
    let (code, report) = run_json(&["verify", &t.s(".")]);
    assert_eq!(code, 1, "{report}");
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert!(
        messages.contains(&"the file is empty (0 bytes)"),
        "{messages:?}"
    );
}

#[test]
fn strict_names_the_cause_not_the_file_that_went_with_it() {
    let t = Tree::new();
    t.file("0001.jpg", b"\xff\xd8\xff\xe0 ok \xff\xd9");
    t.file("0001.json", "{\"a\": 1}");
    t.file("0002.jpg", b"\xff\xd8\xff\xe0 ok \xff\xd9");
    t.file("0002.json", "{\"a\": ");
    let o = run(&["pack", &t.s("."), &t.s("../strict-out"), "--strict"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.starts_with("error: input `0002.json` "), "{err}");
    assert!(!err.contains("left out with"), "{err}");
}

#[test]
fn mds_with_mixed_fields_suggests_fields() {
    let t = Tree::new();
    t.file("in/1.txt", "a");
    t.file("in/1.json", "{}");
    t.file("in/2.txt", "b");
    let (code, report) = run_json(&["pack", &t.s("in"), &t.s("out"), "--format", "mds"]);
    assert_eq!(code, 0, "{report}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(t.join("out/manifest.json")).unwrap()).unwrap();
    let reason = manifest["skipped"][0]["reason"].as_str().unwrap();
    assert_eq!(
        reason,
        "sample `2` has no `json` field: MDS columns are the same for every sample and cannot hold a missing value; to keep such samples, pack only fields every sample has, e.g. `--fields txt`"
    );
}

#[test]
fn help_shows_global_options_apart_and_the_wds_alias() {
    for command in [
        "pack", "tokenize", "manifest", "verify", "merge", "sign", "audit",
    ] {
        let o = run(&[command, "--help"]);
        assert_eq!(o.status.code(), Some(0));
        let help = text(&o.stdout);
        let (own, global) = help
            .split_once("\nGlobal options:\n")
            .unwrap_or_else(|| panic!("{command}: no global heading\n{help}"));
        // Option lines, not prose that mentions a flag.
        let defines = |part: &str, flag: &str| {
            part.lines().any(|l| {
                let l = l.trim_start();
                l.starts_with('-') && l.split([',', ' ']).any(|w| w == flag)
            })
        };
        for flag in ["--jobs", "--quiet", "--verbose", "--json", "--no-progress"] {
            assert!(
                defines(global, flag),
                "{command}: {flag} not under Global options"
            );
            assert!(
                !defines(own, flag),
                "{command}: {flag} among the command's options"
            );
        }
    }
    let help = text(&run(&["pack", "--help"]).stdout);
    assert!(help.contains("alias: wds"), "{help}");
    assert!(help.contains("At least 4KiB"), "{help}");
}

#[test]
fn merge_parts_are_named_inside_the_output() {
    let t = Tree::new();
    let input = corpus(30, 2000);
    for part in ["0", "1"] {
        let o = run(&[
            "pack",
            input.path().to_str().unwrap(),
            &t.s(&format!("out/{part}")),
            "--shard-size",
            "16KiB",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    // From a directory that has no `0` or `1` of its own.
    let elsewhere = Tree::new();
    let o = cmd()
        .current_dir(elsewhere.path())
        .args(["merge", &t.s("out"), "0", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A path that leads into OUTPUT works too (merging again replaces the merge).
    let o = cmd()
        .current_dir(t.path())
        .args(["merge", "out", "out/0", "out/1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run(&["merge", &t.s("out"), "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains(&format!("{}", Path::new(&t.s("out")).join("2").display())));
}

/// Runs `args` under a pseudo-terminal (`script`) and returns what the terminal got.
fn under_pty(args: &[&str]) -> Option<String> {
    let script = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let mut line = crate::util::bin().display().to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let o = std::process::Command::new(script)
        .args(["-qec", &line, "/dev/null"])
        .env("COLUMNS", "160")
        .env_remove("SHARDSMITH_NO_PROGRESS")
        .output()
        .ok()?;
    assert!(o.status.success(), "{}", text(&o.stdout));
    Some(text(&o.stdout))
}

#[test]
fn the_progress_bar_tells_the_truth() {
    let input = corpus(6000, 30_000);
    let out = Tree::new();
    let Some(screen) = under_pty(&[
        "pack",
        input.path().to_str().unwrap(),
        &out.s("shards"),
        "--shard-size",
        "1MB",
        "--validate",
        "full",
    ]) else {
        assert!(std::env::var_os("CI").is_none(), "`script` is missing");
        eprintln!("skipped: no `script` command for a pseudo-terminal");
        return;
    };
    let frames: Vec<&str> = screen
        .split(['\r', '\n'])
        .filter(|f| f.contains("packing"))
        .collect();
    assert!(!frames.is_empty(), "no frame drawn: {screen:?}");
    let mut last = 0u64;
    let mut first_bar = None;
    for frame in &frames {
        assert!(!frame.contains("0 B/0 B"), "{frame}");
        assert!(!frame.contains("iB"), "binary units: {frame}");
        if let Some(at) = frame.find(" samples") {
            let count = frame[..at].rsplit(' ').next().unwrap();
            let (done, total) = count.split_once('/').unwrap();
            let done: u64 = done.parse().unwrap();
            assert_eq!(total, "6000", "{frame}");
            assert!(done >= last, "count went back from {last}: {frame}");
            last = done;
        }
        if first_bar.is_none() && frame.contains('/') && frame.contains(" B") {
            first_bar = Some(*frame);
        }
    }
    if let Some(frame) = first_bar {
        assert!(!frame.contains("ETA"), "{frame}");
    }
}

#[test]
fn first_mistakes_get_the_reason_and_the_way_out() {
    let t = Tree::new();
    t.file("c.jsonl", "{\"text\": \"hello world\"}\n");
    t.file("afile", "not a directory");
    let e = json_error(&["tokenize", &t.s("c.jsonl"), &t.s("out"), "-t", "llama3"]);
    assert_eq!(e["kind"], "tokenizer");
    assert_eq!(
        e["message"],
        "tokenizer `llama3` is neither a built-in name (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) nor an existing tokenizer.json file (a Hugging Face model's, by path)"
    );
    let e = json_error(&["verify", "/dev/null"]);
    assert_eq!(e["kind"], "not_a_file");
    assert_eq!(
        e["message"],
        "`/dev/null` is neither a directory nor a regular file (a device, a FIFO or a socket): verify checks a dataset directory or one file"
    );
    let afile = t.s("afile");
    for args in [
        vec!["pack", samples().to_str().unwrap(), &afile],
        vec!["tokenize", &t.s("c.jsonl"), &afile, "-t", "gpt2"],
    ] {
        let e = json_error(&args);
        assert_eq!(e["kind"], "not_a_directory", "{e}");
        assert_eq!(
            e["message"],
            format!(
                "output `{afile}` is a file, not a directory: the output is a directory (created if missing) or an object store prefix; choose another"
            )
        );
    }
    let missing = t.s("nosuch");
    let e = json_error(&["merge", &missing]);
    assert_eq!(e["kind"], "not_found");
    assert_eq!(e["message"], format!("`{missing}` does not exist"));
}

#[test]
fn a_conversion_keeps_samples_whose_bytes_are_not_what_their_name_says() {
    let t = Tree::new();
    for i in 0..6 {
        // Every reader reads a `jpg` field whatever bytes it holds.
        t.file(&format!("raw/s{i}.jpg"), format!("not a jpeg {i}"));
        t.file(&format!("raw/s{i}.cls"), format!("{i}"));
    }
    let (code, report) = run_json(&["pack", &t.s("raw"), &t.s("wds"), "--validate", "none"]);
    assert_eq!(code, 0, "{report}");
    // Raw files: checked by default, so every sample is left out, and the error says
    // which checks and how to turn them off.
    let e = json_error(&["pack", &t.s("raw"), &t.s("checked")]);
    assert!(
        e["message"].as_str().unwrap().ends_with(
            "(the content checks of `--validate cheap` leave out a sample whose file fails them; `--validate none` packs every field as it is)"
        ),
        "{e}"
    );
    // A conversion keeps all six; asked for, the checks apply.
    for format in ["webdataset", "mds", "parquet"] {
        let out = t.s(&format!("to-{format}"));
        let (code, report) = run_json(&["pack", &t.s("wds"), &out, "--format", format]);
        assert_eq!(code, 0, "{format}: {report}");
        assert_eq!(report["samples"], 6, "{format}: {report}");
        assert_eq!(report["skipped"].as_array().unwrap().len(), 0, "{report}");
    }
    let e = json_error(&["pack", &t.s("wds"), &t.s("asked"), "--validate", "cheap"]);
    assert_eq!(e["kind"], "empty_input", "{e}");
}
