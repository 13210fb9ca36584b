//! Records the git commit the binary is built from (for `shardsmith --version`), from
//! `$SHARDSMITH_COMMIT` when set (a build from a source archive or a wheel's sdist), else
//! from `git`, else `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    // GIT_OPTIONAL_LOCKS=0: `git status` must not refresh the index file, which this
    // script watches: each build would otherwise rerun it and recompile the crate.
    let out = Command::new("git")
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=SHARDSMITH_COMMIT");
    let commit = std::env::var("SHARDSMITH_COMMIT").ok().or_else(|| {
        let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
        let date = git(&["show", "-s", "--format=%cs", "HEAD"]).unwrap_or_default();
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
        Some(format!(
            "{hash}{} ({date})",
            if dirty { "-modified" } else { "" }
        ))
    });
    println!(
        "cargo:rustc-env=SHARDSMITH_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
    println!(
        "cargo:rustc-env=SHARDSMITH_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=SHARDSMITH_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    // A new commit or checkout changes HEAD (and the index for a modified tree).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        // The branch's ref lives in the common directory (not a worktree's own), or only
        // in packed-refs; a path that does not exist would make cargo rerun this script,
        // and recompile the crate, on every build.
        let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| dir.clone());
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let loose = std::path::Path::new(&common).join(&head);
            let packed = std::path::Path::new(&common).join("packed-refs");
            for path in [loose, packed].iter().filter(|p| p.exists()) {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}
