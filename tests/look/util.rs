//! What the tests of `ls`, `cat` and `stats` share: a small input, running the binary,
//! packing, and a corpus's files by key and field.

use std::collections::BTreeMap;

use crate::util::*;

/// Four small samples whose shard layout at `--shard-size 4KiB` is fixed.
pub fn small() -> Tree {
    let t = Tree::new();
    for i in 1..=3 {
        t.file(&format!("raw/a/000{i}.txt"), format!("hello {i}"));
        t.file(&format!("raw/a/000{i}.json"), format!("{{\"i\":{i}}}\n"));
    }
    t.file("raw/b/0001.txt", "x");
    t
}

pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

pub fn pack(t: &Tree, out: &str, extra: &[&str]) {
    let mut args = vec!["pack", &t.s("raw").leak()[..], &t.s(out).leak()[..], "-q"];
    args.extend_from_slice(extra);
    ok(&args);
}

/// Every file of the corpus by key and field.
pub fn originals(tree: &Tree) -> BTreeMap<(String, String), Vec<u8>> {
    snapshot(tree.path())
        .into_iter()
        .map(|(rel, bytes)| {
            let (key, field) = rel.split_once('.').unwrap();
            ((key.to_string(), field.to_string()), bytes)
        })
        .collect()
}
