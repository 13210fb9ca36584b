//! `--version`, shell completions and man pages: generated from the clap definitions,
//! loaded by bash and rendered by man as a user would.

use std::process::Command;

use crate::util::*;

/// Every command name, as `shardsmith --help` lists them.
fn commands() -> Vec<String> {
    let help = text(&run(&["--help"]).stdout);
    let mut names = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            if line.trim().is_empty() || !line.starts_with("  ") {
                break;
            }
            if line.starts_with("   ") {
                continue; // a wrapped description
            }
            let name = line.split_whitespace().next().unwrap();
            if name != "help" {
                names.push(name.to_string());
            }
        }
    }
    assert!(names.len() >= 15, "{help}");
    names
}

/// Runs `script` in bash with the binary's directory first on PATH.
fn bash(script: &str) -> (i32, String, String) {
    let dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .output()
        .expect("bash runs");
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn version_names_the_commit_the_target_and_what_the_build_reads() {
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let shown = text(&out.stdout);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[0],
        format!("shardsmith {}", env!("CARGO_PKG_VERSION"))
    );
    // Built from a git checkout: a 12-digit commit and its date, never `unknown`.
    let commit = lines[1]
        .strip_prefix("commit       ")
        .expect("a commit line");
    let hash = commit.split(['-', ' ']).next().unwrap();
    assert_eq!(hash.len(), 12, "{commit}");
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{commit}");
    assert!(lines[2].starts_with("target       x86_64-"), "{shown}");
    assert!(shown.contains("storage      local files; s3://"), "{shown}");
    assert!(
        shown.contains("pack         webdataset, mds, parquet, hf, litdata\n"),
        "{shown}"
    );
    assert!(shown.contains("o200k_base"), "{shown}");
    // -V stays one line.
    assert_eq!(
        text(&run(&["-V"]).stdout),
        format!("shardsmith {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bash_loads_the_completions_and_completes_every_command_and_flag() {
    let (code, out, err) = bash("source <(shardsmith completions bash) && complete -p shardsmith");
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("_shardsmith") && out.trim_end().ends_with(" shardsmith"),
        "{out}"
    );
    let complete = |words: &str, cword: usize| {
        let (code, out, err) = bash(&format!(
            "source <(shardsmith completions bash); COMP_WORDS=({words}); COMP_CWORD={cword}; \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
             _shardsmith shardsmith \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        ));
        assert_eq!(code, 0, "{err}");
        out.lines().map(str::to_string).collect::<Vec<_>>()
    };
    let offered = complete("shardsmith ''", 1);
    for name in commands() {
        assert!(offered.contains(&name), "`{name}` not offered: {offered:?}");
    }
    let flags = complete("shardsmith verify --", 2);
    for flag in [
        "--expect-root",
        "--manifest",
        "--scan-values",
        "--json",
        "--jobs",
    ] {
        assert!(
            flags.iter().any(|f| f == flag),
            "`{flag}` not offered: {flags:?}"
        );
    }
    let flags = complete("shardsmith diff --", 2);
    for flag in ["--values", "--map"] {
        assert!(
            flags.iter().any(|f| f == flag),
            "`{flag}` not offered: {flags:?}"
        );
    }
}

#[test]
fn every_shell_gets_a_script_naming_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        for name in commands() {
            assert!(script.contains(&name), "{shell}: `{name}` missing");
        }
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_renders_a_page_for_shardsmith_and_for_every_command() {
    let render = |command: Option<&str>| {
        let arg = command.unwrap_or_default();
        let (code, out, err) = bash(&format!(
            "set -o pipefail; shardsmith man {arg} | MANWIDTH=100 MAN_KEEP_FORMATTING= man -l - | col -b"
        ));
        assert_eq!(code, 0, "man {arg}: {err}");
        out
    };
    let mut checked = 0;
    let top = render(None);
    assert!(top.contains("shardsmith(1)"), "{top}");
    for name in commands() {
        assert!(
            top.contains(&format!("shardsmith-{name}(1)")),
            "top page: {name} missing\n{top}"
        );
        let page = render(Some(&name));
        assert!(page.contains(&format!("shardsmith-{name}(1)")), "{page}");
        // Every long flag of the command is on its page.
        let help = text(&run(&[&name, "--help"]).stdout);
        for flag in help
            .split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == ']')
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| {
                w.split('=')
                    .next()
                    .unwrap()
                    .trim_end_matches(['.', ':', ')', '`'])
            })
            .filter(|w| {
                w.bytes()
                    .skip(2)
                    .all(|b| b.is_ascii_lowercase() || b == b'-')
            })
        {
            if help
                .lines()
                .any(|l| l.trim_start().starts_with(flag) || l.contains(&format!(", {flag}")))
            {
                assert!(page.contains(flag), "man {name}: `{flag}` missing");
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} flags checked");
    let out = run(&["man", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`nosuch` is not a shardsmith command"));
}
