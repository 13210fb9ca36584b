//! Every relative link of every page resolves (issue 30: the README's reference lives in
//! pages beside the code, `cli/README.md`, `formats/*/README.md`, ..., which link to each
//! other and to each other's headings). For each `.md` file of the repository
//! (outside `target/` and hidden directories), every `[text](path)`, `[text](path#anchor)`
//! and in-page `[text](#anchor)` outside code blocks must name a file or directory that
//! exists and, with an anchor, a heading of that file, by GitHub's rules (lowercase,
//! spaces to `-`, punctuation other than `-` and `_` dropped, `-1`, `-2` for repeats).
//! Links with a scheme (`https://...`) are not followed.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.md` file below `root`, relative to it with `/` separators, sorted.
pub fn markdown_files(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else if name.ends_with(".md") {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Whether each line of `text` lies in a fenced code block (fence lines included).
fn in_code(text: &str) -> Vec<bool> {
    let mut fence = false;
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                fence = !fence;
                return true;
            }
            fence
        })
        .collect()
}

/// The targets of the links of `text` outside code blocks: (1-based line, target).
pub fn links(text: &str) -> Vec<(usize, String)> {
    let code = in_code(text);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if code[i] {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.is_empty() && !target.contains(char::is_whitespace) {
                out.push((i + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading's text.
pub fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of `text` (outside code blocks), repeats numbered.
pub fn anchors(text: &str) -> BTreeSet<String> {
    let code = in_code(text);
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if code[i] || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = anchor(&line[hashes..]);
        let mut name = base.clone();
        let mut n = 0;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.insert(name);
    }
    out
}

/// `path` relative to the repository root, with `.` and `..` resolved; None when it
/// leaves the repository.
pub fn resolve(page: &str, path: &str) -> Option<String> {
    let mut parts: Vec<String> = Path::new(page)
        .parent()
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for c in Path::new(path).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => return None,
        }
    }
    Some(parts.join("/"))
}

/// What is wrong with each relative link of `page`, one message each.
fn broken_links(root: &Path, page: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join(page)).unwrap();
    let mut out = Vec::new();
    for (line, target) in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((p, f)) => (p, Some(f)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            Some(page.to_string())
        } else {
            resolve(page, path)
        };
        let Some(file) = file.filter(|f| root.join(f).exists()) else {
            out.push(format!("{page} line {line}: `{target}`: no such file"));
            continue;
        };
        let Some(fragment) = fragment else { continue };
        let Ok(linked) = std::fs::read_to_string(root.join(&file)) else {
            out.push(format!(
                "{page} line {line}: `{target}`: not a page with headings"
            ));
            continue;
        };
        if !anchors(&linked).contains(fragment) {
            out.push(format!(
                "{page} line {line}: `{target}`: {file} has no heading with the anchor `#{fragment}`"
            ));
        }
    }
    out
}

#[test]
fn every_relative_link_of_every_page_resolves() {
    let root = root();
    let pages = markdown_files(&root);
    assert!(pages.contains(&"README.md".to_string()), "{pages:?}");
    let broken: Vec<String> = pages
        .iter()
        .flat_map(|page| broken_links(&root, page))
        .collect();
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn anchors_follow_githubs_rules() {
    assert_eq!(
        anchor("Split runs (Slurm and Kubernetes)"),
        "split-runs-slurm-and-kubernetes"
    );
    assert_eq!(
        anchor("Tensor digests: the canonical form"),
        "tensor-digests-the-canonical-form"
    );
    assert_eq!(
        anchor("Token files (`tokenize --format megatron|nanogpt|llmc`)"),
        "token-files-tokenize---format-megatronnanogptllmc"
    );
    assert_eq!(anchor("Dev_notes über alles"), "dev_notes-über-alles");
    let text = "# A\n## pack\n```sh\n# not a heading\n```\n### pack\n#nospace\n";
    let got: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(got, ["a", "pack", "pack-1"]);
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "See [a](x.md#b) and [`c`](#d), [e](https://e.org).\n```\n[f](g.md)\n```\n[h\nsplit](../i.md)\n";
    let got: Vec<(usize, String)> = links(text);
    let want = [
        (1, "x.md#b"),
        (1, "#d"),
        (1, "https://e.org"),
        (6, "../i.md"),
    ];
    assert_eq!(
        got,
        want.map(|(l, t)| (l, t.to_string())).to_vec(),
        "links of {text:?}"
    );
    assert_eq!(
        resolve("cli/README.md", "../formats/x.md").as_deref(),
        Some("formats/x.md")
    );
    assert_eq!(
        resolve("README.md", "cli/python/README.md").as_deref(),
        Some("cli/python/README.md")
    );
    assert_eq!(resolve("README.md", "../outside.md"), None);
}

#[test]
fn the_readme_reads_in_five_minutes_and_no_page_is_a_book() {
    let root = root();
    for page in markdown_files(&root) {
        let size = std::fs::metadata(root.join(&page)).unwrap().len();
        let limit = if page == "README.md" { 25_000 } else { 40_000 };
        assert!(
            size <= limit,
            "{page} is {size} bytes, over {limit}: move reference text to a page beside its code"
        );
    }
}
