//! The real litdata 0.2.76 (`tests/interop/check_litdata.py`, in the torch env) against
//! `--format litdata` and `--input-format litdata`: our chunks read by
//! `litdata.StreamingDataset` (every key and byte of the input), a `litdata.optimize`
//! dataset of every common serializer packed by us to WebDataset (every value), one of
//! only bytes/str/int/float/bool values (which optimize keeps in each chunk's Arrow
//! footer) likewise, with damaged footers named by `verify`, the same with
//! `compression="zstd"` in each of optimize's wraps (IPC zstd footers, whole `.zstd:3.bin`
//! chunks, LDFZ01 framed batches, an item a frame), damaged ones named by `verify`, and
//! litdata -> mds -> litdata giving the same items, and list values (`json` leaves)
//! read as the same JSON text from Arrow footers and from PyTree items.
//!
//! Needs `SHARDSMITH_TORCH_PYTHON` (the torch env holds litdata and torch), as
//! `tests/interop.rs`: without it the test says so, and fails under CI.

use crate::interop::{run_torch, torch_python};
use crate::util::*;

/// Runs `tests/interop/check_litdata.py ARGS...` in the torch env and asserts that every
/// check it made passed.
fn check(args: &[&str]) {
    let mut all = vec!["check_litdata.py"];
    all.extend(args);
    let Some(stdout) = run_torch(&all) else {
        return;
    };
    assert!(
        stdout.contains(" passed, 0 failed"),
        "check_litdata.py {args:?}: litdata disagrees:\n{stdout}"
    );
}

fn pack_ok(args: &[&str]) {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn streaming_dataset_reads_every_key_and_byte_we_wrote() {
    if torch_python().is_none() {
        return;
    }
    let input = corpus(50, 6000);
    // Keys and text fields beyond ASCII, an empty file.
    input
        .file("zz/ünï.txt", "héllo wörld")
        .file("zz/ünï.json", "{\"a\": \"é\"}")
        .file("zz/ünï.bin", b"");
    let out = Tree::new();
    let dir = out.join("lit");
    pack_ok(&[
        "pack",
        input.path().to_str().unwrap(),
        dir.to_str().unwrap(),
        "--format",
        "litdata",
        "--shard-size",
        "24KiB",
    ]);
    check(&[input.path().to_str().unwrap(), dir.to_str().unwrap()]);
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn an_optimize_dataset_of_every_common_serializer_packs_to_webdataset() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let lit = out.join("optimized");
    check(&["make", lit.to_str().unwrap()]);
    let wds = out.join("wds");
    pack_ok(&["pack", lit.to_str().unwrap(), wds.to_str().unwrap()]);
    check(&["wds", lit.to_str().unwrap(), wds.to_str().unwrap()]);
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn an_optimize_dataset_of_arrow_footer_chunks_packs_to_webdataset_and_damage_is_named() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let lit = out.join("plain");
    check(&["make-plain", lit.to_str().unwrap()]);
    let wds = out.join("wds");
    pack_ok(&["pack", lit.to_str().unwrap(), wds.to_str().unwrap()]);
    check(&["wds", lit.to_str().unwrap(), wds.to_str().unwrap()]);
    let o = run(&["verify", lit.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stdout));

    // A footer cut short, and one whose length is one byte off.
    let chunk = lit.join("chunk-0-1.bin");
    let data = std::fs::read(&chunk).unwrap();
    std::fs::write(&chunk, &data[..data.len() - 20]).unwrap();
    let other = lit.join("chunk-0-2.bin");
    let mut wrong = std::fs::read(&other).unwrap();
    let at = wrong.len() - 12;
    wrong[at] ^= 1;
    std::fs::write(&other, &wrong).unwrap();
    let o = run(&["verify", lit.to_str().unwrap()]);
    let said = text(&o.stdout) + &text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("chunk-0-1.bin: truncated")
            && said.contains("Arrow footer")
            && said.contains("chunk-0-2.bin")
            && said.contains("its Arrow footer says it holds"),
        "{said}"
    );
    let o = run(&[
        "pack",
        lit.to_str().unwrap(),
        out.join("again").to_str().unwrap(),
    ]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("chunk-0-1.bin"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn litdata_to_mds_to_litdata_gives_the_same_items() {
    if torch_python().is_none() {
        return;
    }
    let input = corpus(40, 6000);
    let out = Tree::new();
    let (lit, mds, back) = (out.join("lit"), out.join("mds"), out.join("back"));
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    pack_ok(&[
        "pack",
        input.path().to_str().unwrap(),
        &s(&lit),
        "--format",
        "litdata",
        "--shard-size",
        "16KiB",
    ]);
    pack_ok(&["pack", &s(&lit), &s(&mds), "--format", "mds"]);
    pack_ok(&[
        "pack",
        &s(&mds),
        &s(&back),
        "--format",
        "litdata",
        "--shard-size",
        "16KiB",
    ]);
    check(&["same", &s(&lit), &s(&back)]);
    // And from litdata's own writer: optimize -> mds -> litdata keeps every value as
    // the fields the input gives (numbers as text, arrays as .npy, images as PNG).
    let optimized = out.join("optimized");
    check(&["make", &s(&optimized)]);
    let (mds2, wds) = (out.join("mds2"), out.join("wds"));
    pack_ok(&["pack", &s(&optimized), &s(&mds2), "--format", "mds"]);
    pack_ok(&["pack", &s(&mds2), &s(&wds)]);
    check(&["wds", &s(&optimized), &s(&wds)]);
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn optimize_datasets_compressed_with_zstd_pack_to_webdataset_and_damage_is_named() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    for wrap in ["footer", "chunk", "batch", "sample"] {
        let lit = out.join(wrap);
        check(&["make-zstd", wrap, &s(&lit)]);
        let o = run(&["verify", &s(&lit)]);
        assert!(
            o.status.success(),
            "{wrap}: {}",
            text(&o.stdout) + &text(&o.stderr)
        );
        let wds = out.join(&format!("{wrap}-wds"));
        pack_ok(&["pack", &s(&lit), &s(&wds)]);

        // Damage a copy (StreamingDataset inflates `chunk` files beside them and removes
        // them): chunk 1 cut short, and the first zstd frame of chunk 2 damaged.
        let damaged = out.join(&format!("{wrap}-damaged"));
        copy_dir(&lit, &damaged);
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(lit.join("index.json")).unwrap()).unwrap();
        let name = |i: usize| index["chunks"][i]["filename"].as_str().unwrap().to_string();
        let cut = damaged.join(name(1));
        let data = std::fs::read(&cut).unwrap();
        std::fs::write(&cut, &data[..data.len() - 5]).unwrap();
        let flipped = damaged.join(name(2));
        let mut data = std::fs::read(&flipped).unwrap();
        let (at, what) = match wrap {
            // A zstd-compressed buffer of the IPC file.
            "footer" => (
                data.windows(4)
                    .position(|w| w == [0x28, 0xb5, 0x2f, 0xfd])
                    .expect("an IPC zstd buffer")
                    + 1,
                "its Arrow footer is no readable Arrow IPC file",
            ),
            "chunk" => (1, "its zstd stream is no readable zstd"),
            "batch" => {
                let n = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
                let entry = 24 + 4 * (n + 1);
                let start = u64::from_le_bytes(data[entry + 8..entry + 16].try_into().unwrap());
                (
                    start as usize + 1,
                    "frame 0 (items 0..2) is no readable zstd",
                )
            }
            _ => (
                u32::from_le_bytes(data[4..8].try_into().unwrap()) as usize + 1,
                "item 0 is no readable zstd",
            ),
        };
        data[at] ^= 0x55;
        std::fs::write(&flipped, &data).unwrap();
        let o = run(&["verify", &s(&damaged)]);
        let said = text(&o.stdout) + &text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{wrap}: {said}");
        assert!(
            said.contains(&format!("{}: truncated", name(1)))
                && said.contains(&format!("{}: bad_record", name(2)))
                && said.contains(what),
            "{wrap}: {said}"
        );
        let o = run(&[
            "pack",
            &s(&damaged),
            &s(&out.join(&format!("{wrap}-again"))),
        ]);
        assert!(
            !o.status.success() && text(&o.stderr).contains(&name(1)),
            "{wrap}: {}",
            text(&o.stderr)
        );

        check(&["wds", &s(&lit), &s(&wds)]);
    }
}

/// Packs LitData dataset `lit` to WebDataset at `wds` and returns every member by name.
fn members(
    lit: &std::path::Path,
    wds: &std::path::Path,
) -> std::collections::BTreeMap<String, Vec<u8>> {
    pack_ok(&["pack", lit.to_str().unwrap(), wds.to_str().unwrap()]);
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(wds).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tar") {
            let mut archive = tar::Archive::new(std::fs::File::open(&path).unwrap());
            for member in archive.entries().unwrap() {
                let mut member = member.unwrap();
                let name = member.path().unwrap().to_string_lossy().into_owned();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut member, &mut data).unwrap();
                out.insert(name, data);
            }
        }
    }
    out
}

#[test]
#[ignore = "needs the torch env: SHARDSMITH_TORCH_PYTHON (tests/setup.sh)"]
fn list_values_read_the_same_from_arrow_footers_and_pytree_items() {
    if torch_python().is_none() {
        return;
    }
    let out = Tree::new();
    let (footer, pytree) = (out.join("nested"), out.join("nested-pytree"));
    check(&["make-nested", footer.to_str().unwrap()]);
    check(&["make-nested-pytree", pytree.to_str().unwrap()]);
    let from_footer = members(&footer, &out.join("wds-footer"));
    let from_pytree = members(&pytree, &out.join("wds-pytree"));
    for (lit, wds) in [(&footer, "wds-footer"), (&pytree, "wds-pytree")] {
        check(&[
            "wds",
            lit.to_str().unwrap(),
            out.join(wds).to_str().unwrap(),
        ]);
        let o = run(&["verify", lit.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stdout));
    }
    // The same values give the same fields both ways (the PyTree items add `vec`).
    let mut without_vec = from_pytree.clone();
    without_vec.retain(|name, _| !name.ends_with(".vec"));
    assert_eq!(from_footer, without_vec);
    assert!(
        from_footer["nested-007.scores"].starts_with(b"[0.7000000000000001,-2.5e-7,"),
        "{}",
        text(&from_footer["nested-007.scores"])
    );
    // MDS output: the list leaves are json columns.
    let mds = out.join("mds");
    pack_ok(&[
        "pack",
        footer.to_str().unwrap(),
        mds.to_str().unwrap(),
        "--format",
        "mds",
    ]);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(mds.join("index.json")).unwrap()).unwrap();
    let shard = &index["shards"][0];
    assert_eq!(
        shard["column_names"],
        serde_json::json!(["box.h", "box.w", "ids", "key", "scores", "tags", "txt"])
    );
    assert_eq!(
        shard["column_encodings"],
        serde_json::json!(["json", "int", "json", "str", "json", "json", "str"])
    );

    // A damaged list (item 0's `tags` states 2^32-1 strings in 5 bytes) is named by verify
    // and refused by pack with the chunk and item.
    let chunk = pytree.join("chunk-0-0.bin");
    let mut data = std::fs::read(&chunk).unwrap();
    let word = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    let start = word(4);
    let tags = start + 4 * 8 + word(start);
    assert_eq!(
        &data[tags..tags + 5],
        [1, 0, 0, 0, 0],
        "item 0's tags are []"
    );
    data[tags + 1..tags + 5].copy_from_slice(&[0xff; 4]);
    std::fs::write(&chunk, &data).unwrap();
    let o = run(&["verify", pytree.to_str().unwrap()]);
    let said = text(&o.stdout) + &text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("chunk-0-0.bin") && said.contains("item 0 leaf `tags`"),
        "{said}"
    );
    let o = run(&[
        "pack",
        pytree.to_str().unwrap(),
        out.join("again").to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert!(
        !o.status.success()
            && stderr.contains("chunk-0-0.bin")
            && stderr.contains("item 0 leaf `tags` (json)")
            && stderr.contains("ends inside"),
        "{stderr}"
    );
}
