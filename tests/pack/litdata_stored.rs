//! `--input-format litdata` and `verify` on hand-made chunks stored the other ways
//! litdata 0.2.76's `optimize` stores items: in an Arrow IPC footer, wrapped in zstd
//! (`chunk`, `batch`, `sample`), with `json` leaves (lists). The real `optimize`'s output
//! of each is in litdata_interop.rs.

use serde_json::Value;

use super::litdata::{chunk, hand_made, index, pack, pack_ok};
use crate::util::*;

/// An Arrow IPC file of two rows, as litdata 0.2.76's `append_arrow_row_footer` writes
/// one (pyarrow `ipc.new_file` of `Table.from_pylist`): `__key__` `a`, `b`; `txt`
/// `héllo`, ``; `raw` `00 01`, `xyz`; `n` -3, 12345678901; `f` 0.1, 1e20 (text `1e20`, as every LitData float leaf).
const FOOTER_IPC: &str = concat!(
    "QVJST1cxAAD/////KAEAABAAAAAAAAoADAAGAAUACAAKAAAAAAEEAAwAAAAIAAgAAAAEAAgAAAAEAAAABQAAAMwA",
    "AACUAAAAbAAAADQAAAAEAAAAWP///wAAAQMQAAAAGAAAAAQAAAAAAAAAAQAAAGYABgAIAAYABgAAAAAAAgCE////",
    "AAABAhAAAAAcAAAABAAAAAAAAAABAAAAbgAAAAgADAAIAAcACAAAAAAAAAFAAAAAuP///wAAAQQQAAAAFAAAAAQA",
    "AAAAAAAAAwAAAHJhdwCk////3P///wAAAQUQAAAAFAAAAAQAAAAAAAAAAwAAAHR4dADI////EAAUAAgABgAHAAwA",
    "AAAQABAAAAAAAAEFEAAAABwAAAAEAAAAAAAAAAcAAABfX2tleV9fAAQABAAEAAAA/////3gBAAAUAAAAAAAAAAwA",
    "FgAGAAUACAAMAAwAAAAAAwQAGAAAAGgAAAAAAAAAAAAKABgADAAEAAgACgAAAOwAAAAQAAAAAgAAAAAAAAAAAAAA",
    "DQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAEAAAAAAAAAACAAAAAAAAABgAAAAAAAAAAAAAAAAA",
    "AAAYAAAAAAAAAAwAAAAAAAAAKAAAAAAAAAAGAAAAAAAAADAAAAAAAAAAAAAAAAAAAAAwAAAAAAAAAAwAAAAAAAAA",
    "QAAAAAAAAAAFAAAAAAAAAEgAAAAAAAAAAAAAAAAAAABIAAAAAAAAABAAAAAAAAAAWAAAAAAAAAAAAAAAAAAAAFgA",
    "AAAAAAAAEAAAAAAAAAAAAAAABQAAAAIAAAAAAAAAAAAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAgAAAAAAAAAAAAAA",
    "AAAAAAIAAAAAAAAAAAAAAAAAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAEAAAACAAAAAAAAAGFiAAAAAAAAAAAAAAYA",
    "AAAGAAAAAAAAAGjDqWxsbwAAAAAAAAIAAAAFAAAAAAAAAAABeHl6AAAA/f////////81HNzfAgAAAJqZmZmZmbk/",
    "QIy1eB2vFUT/////AAAAABAAAAAMABQABgAIAAwAEAAMAAAAAAAEADQAAAAkAAAABAAAAAEAAAA4AQAAAAAAAIAB",
    "AAAAAAAAaAAAAAAAAAAAAAAACAAIAAAABAAIAAAABAAAAAUAAADMAAAAlAAAAGwAAAA0AAAABAAAAFj///8AAAED",
    "EAAAABgAAAAEAAAAAAAAAAEAAABmAAYACAAGAAYAAAAAAAIAhP///wAAAQIQAAAAHAAAAAQAAAAAAAAAAQAAAG4A",
    "AAAIAAwACAAHAAgAAAAAAAABQAAAALj///8AAAEEEAAAABQAAAAEAAAAAAAAAAMAAAByYXcApP///9z///8AAAEF",
    "EAAAABQAAAAEAAAAAAAAAAMAAAB0eHQAyP///xAAFAAIAAYABwAMAAAAEAAQAAAAAAABBRAAAAAcAAAABAAAAAAA",
    "AAAHAAAAX19rZXlfXwAEAAQABAAAAFABAABBUlJPVzE=",
);

/// A chunk of `items` items kept only in the Arrow footer `ipc`, as optimize writes
/// dicts of plain values: every offset is the header's end.
fn footer_chunk(items: u32, ipc: &[u8]) -> Vec<u8> {
    let header = 4 + 4 * (items + 1);
    let mut out = items.to_le_bytes().to_vec();
    for _ in 0..=items {
        out.extend_from_slice(&header.to_le_bytes());
    }
    out.extend_from_slice(ipc);
    out.extend_from_slice(&(ipc.len() as u32).to_le_bytes());
    out.extend_from_slice(b"LDARW01\0");
    out
}

#[test]
fn items_kept_only_in_an_arrow_footer_are_read_and_a_damaged_footer_is_named() {
    use base64::Engine;
    let ipc = base64::engine::general_purpose::STANDARD
        .decode(FOOTER_IPC)
        .unwrap();
    let ds = hand_made(
        &["__key__", "txt", "raw", "n", "f"],
        &["str", "str", "bytes", "int", "float"],
        &[],
        serde_json::json!({}),
    );
    let data = footer_chunk(2, &ipc);
    ds.file("chunk-0-0.bin", &data);
    let mut idx = index(ds.path());
    idx["chunks"][0]["chunk_size"] = Value::from(2);
    idx["chunks"][0]["chunk_bytes"] = Value::from(data.len());
    ds.file("index.json", serde_json::to_vec(&idx).unwrap());

    let out = Tree::new();
    let wds = out.join("wds");
    pack_ok(ds.path(), &wds, &["--input-format", "litdata"]);
    let t = text(&std::fs::read(wds.join("shard-000000.tar")).unwrap());
    for member in [
        "a.txt", "a.raw", "a.n", "a.f", "b.txt", "b.raw", "b.n", "b.f",
    ] {
        assert!(t.contains(member), "{member}");
    }
    let cat =
        |key: &str, field: &str| run(&["cat", ds.path().to_str().unwrap(), key, field]).stdout;
    assert_eq!(cat("a", "txt"), "héllo".as_bytes());
    assert_eq!(cat("a", "raw"), b"\x00\x01");
    assert_eq!(cat("a", "n"), b"-3");
    assert_eq!(cat("a", "f"), b"0.1");
    assert_eq!(cat("b", "raw"), b"xyz");
    assert_eq!(cat("b", "n"), b"12345678901");
    assert_eq!(cat("b", "f"), b"1e20");
    let o = run(&["verify", ds.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stdout));

    // A column of another type than the leaf's serializer says.
    let swapped = hand_made(
        &["__key__", "txt", "raw", "n", "f"],
        &["str", "str", "bytes", "float", "float"],
        &[],
        serde_json::json!({}),
    );
    let mut swapped_idx = idx.clone();
    swapped_idx["config"]["data_format"][3] = Value::from("float");
    swapped.file("chunk-0-0.bin", &data);
    swapped.file("index.json", serde_json::to_vec(&swapped_idx).unwrap());
    let o = pack(swapped.path(), &out.join("swapped"), &[]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("leaf `n` (float) as Arrow Int64"),
        "{}",
        text(&o.stderr)
    );

    // The footer's length one byte off, then the footer cut short.
    let mut wrong = data.clone();
    let at = wrong.len() - 12;
    wrong[at] ^= 1;
    for (damaged, want) in [
        (wrong, "its Arrow footer says it holds"),
        (data[..data.len() - 5].to_vec(), "truncated"),
    ] {
        ds.file("chunk-0-0.bin", &damaged);
        let o = run(&["verify", ds.path().to_str().unwrap()]);
        let said = text(&o.stdout) + &text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{said}");
        assert!(
            said.contains("chunk-0-0.bin") && said.contains(want),
            "{said}"
        );
        let o = pack(ds.path(), &out.join("damaged"), &[]);
        assert!(
            !o.status.success() && text(&o.stderr).contains("chunk-0-0.bin"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// `items` wrapped as `optimize(compression="zstd")` does: `batch` (LDFZ01 frames of `k`
/// items, `framed_zstd.pack_framed_zstd`) or `sample` (an item a frame).
fn zstd_wrapped(items: &[Vec<&[u8]>], batch: Option<usize>) -> Vec<u8> {
    let plain = chunk(items);
    let word = |at: usize| u32::from_le_bytes(plain[at..at + 4].try_into().unwrap()) as usize;
    let n = items.len();
    let offsets: Vec<usize> = (0..=n).map(|i| word(4 + 4 * i)).collect();
    let pack =
        |from: usize, to: usize| zstd::encode_all(&plain[offsets[from]..offsets[to]], 3).unwrap();
    let Some(k) = batch else {
        let frames: Vec<Vec<u8>> = (0..n).map(|i| pack(i, i + 1)).collect();
        let sizes: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let mut out = Vec::new();
        let mut at = 4 + 4 * (n + 1);
        out.extend((n as u32).to_le_bytes());
        out.extend((at as u32).to_le_bytes());
        for f in &sizes {
            at += f.len();
            out.extend((at as u32).to_le_bytes());
        }
        sizes.iter().for_each(|f| out.extend_from_slice(f));
        return out;
    };
    let frames = n.div_ceil(k);
    let mut out = b"LDFZ01\0\0\x01\0\0\0".to_vec();
    [n, k, frames]
        .iter()
        .for_each(|v| out.extend((*v as u32).to_le_bytes()));
    offsets
        .iter()
        .for_each(|o| out.extend(((o - offsets[0]) as u32).to_le_bytes()));
    let (mut at, mut payload) = (out.len() + 24 * frames, Vec::new());
    for f in 0..frames {
        let (from, to) = (f * k, (f * k + k).min(n));
        let packed = pack(from, to);
        out.extend((from as u32).to_le_bytes());
        out.extend(((to - from) as u32).to_le_bytes());
        out.extend((at as u64).to_le_bytes());
        out.extend((packed.len() as u32).to_le_bytes());
        out.extend(((offsets[to] - offsets[from]) as u32).to_le_bytes());
        at += packed.len();
        payload.extend(packed);
    }
    out.extend(payload);
    out
}

#[test]
fn zstd_wrapped_chunks_are_read_and_damaged_ones_are_named_by_verify() {
    let values: Vec<Vec<u8>> = (0..7u8).map(|i| vec![b'a' + i; 5 + i as usize]).collect();
    let keys: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
    let items: Vec<Vec<&[u8]>> = (0..7)
        .map(|i| vec![keys[i].as_bytes(), &values[i][..]])
        .collect();
    let out = Tree::new();
    // (name, compression_level, the chunk file, its name).
    let plain = chunk(&items);
    let whole = zstd::encode_all(&plain[..], 3).unwrap();
    let wraps: [(&str, Value, Vec<u8>, &str); 3] = [
        ("chunk", Value::Null, whole, "chunk-0-0.zstd.bin"),
        (
            "batch",
            "batch".into(),
            zstd_wrapped(&items, Some(3)),
            "chunk-0-0.bin",
        ),
        (
            "sample",
            "sample".into(),
            zstd_wrapped(&items, None),
            "chunk-0-0.bin",
        ),
    ];
    for (wrap, level, file, name) in wraps {
        let config = serde_json::json!({"compression": "zstd", "compression_level": level});
        let ds = hand_made(&["__key__", "v"], &["str", "bytes"], &items, config);
        let mut idx = index(ds.path());
        idx["chunks"][0]["filename"] = name.into();
        if wrap != "chunk" {
            idx["chunks"][0]["chunk_bytes"] = file.len().into();
        }
        std::fs::remove_file(ds.path().join("chunk-0-0.bin")).unwrap();
        ds.file(name, &file[..])
            .file("index.json", serde_json::to_vec(&idx).unwrap());
        let o = run(&["verify", ds.path().to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{wrap}: {}",
            text(&o.stdout) + &text(&o.stderr)
        );
        let wds = out.join(wrap);
        pack_ok(ds.path(), &wds, &[]);
        let o = run(&["cat", ds.path().to_str().unwrap(), "k6", "v"]);
        assert_eq!(o.stdout, values[6], "{wrap}: {}", text(&o.stderr));
        if wrap == "chunk" {
            // chunk_bytes is the size inflated: one that disagrees is named.
            let mut wrong = idx.clone();
            wrong["chunks"][0]["chunk_bytes"] = (plain.len() + 1).into();
            ds.file("index.json", serde_json::to_vec(&wrong).unwrap());
            let o = run(&["verify", ds.path().to_str().unwrap()]);
            let said = text(&o.stdout) + &text(&o.stderr);
            let want = format!(
                "inflates to {} bytes, index.json says {}",
                plain.len(),
                plain.len() + 1
            );
            assert!(o.status.code() == Some(1) && said.contains(&want), "{said}");
            let o = pack(ds.path(), &out.join("chunk-bytes"), &[]);
            let want = format!(
                "inflates to {} bytes, index.json says chunk_bytes {}",
                plain.len(),
                plain.len() + 1
            );
            assert!(text(&o.stderr).contains(&want), "{}", text(&o.stderr));
            ds.file("index.json", serde_json::to_vec(&idx).unwrap());
        }

        // Damage: cut short, and a byte of the first zstd frame's magic flipped.
        let zstd_at = match wrap {
            "chunk" => 0,
            "batch" => {
                u64::from_le_bytes(file[24 + 32 + 8..24 + 32 + 16].try_into().unwrap()) as usize
            }
            _ => u32::from_le_bytes(file[4..8].try_into().unwrap()) as usize,
        };
        let mut flipped = file.clone();
        flipped[zstd_at + 1] ^= 0x55;
        for (damaged, want, named) in [
            (&file[..file.len() - 3], format!("{name}: truncated"), false),
            (&flipped[..], format!("{name}: bad_record"), true),
        ] {
            ds.file(name, damaged);
            let o = run(&["verify", ds.path().to_str().unwrap()]);
            let said = text(&o.stdout) + &text(&o.stderr);
            let what = match wrap {
                "chunk" => "its zstd stream",
                "batch" => "frame ",
                _ => "item ",
            };
            assert!(
                o.status.code() == Some(1)
                    && said.contains(&want)
                    && (!named || said.contains(what)),
                "{wrap}: {said}"
            );
            let o = pack(ds.path(), &out.join(&format!("{wrap}-again")), &[]);
            assert!(
                !o.status.success() && text(&o.stderr).contains(name),
                "{wrap}: {}",
                text(&o.stderr)
            );
        }
    }
}

#[test]
fn json_leaves_become_their_json_text_and_damaged_ones_are_named() {
    // `_nested_dumps` of ["a", "b"] and of {"w": 3, "h": [3, 4]} (litdata 0.2.76), and
    // older litdata's plain JSON text.
    let tags = b"\x01\x02\x00\x00\x00\x01\x00\x00\x00a\x01\x00\x00\x00b";
    let mut boxed = b"\x05\x02\x00\x00\x00\x01\x00\x00\x00w\x08".to_vec();
    boxed.extend_from_slice(&3i64.to_le_bytes());
    boxed.extend_from_slice(b"\x01\x00\x00\x00h\x02\x02\x00\x00\x00");
    boxed.extend_from_slice(&3i64.to_le_bytes());
    boxed.extend_from_slice(&4i64.to_le_bytes());
    let ds = hand_made(
        &["__key__", "tags", "box"],
        &["str", "json", "json"],
        &[
            vec![b"a", tags, &boxed],
            vec![b"b", br#"["x", 0.5]"#, b"\x0b"],
        ],
        serde_json::json!({}),
    );
    let cat = |key: &str, field: &str| {
        let o = run(&["cat", ds.path().to_str().unwrap(), key, field]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    assert_eq!(cat("a", "tags"), r#"["a","b"]"#);
    assert_eq!(cat("a", "box"), r#"{"w":3,"h":[3,4]}"#);
    assert_eq!(cat("b", "tags"), r#"["x",0.5]"#);
    assert_eq!(cat("b", "box"), "null");
    let out = Tree::new();
    pack_ok(ds.path(), &out.join("mds"), &["--format", "mds"]);
    let mds = index(&out.join("mds"));
    assert_eq!(
        mds["shards"][0]["column_encodings"],
        serde_json::json!(["json", "str", "json"])
    );
    let (code, report) = run_json(&["verify", ds.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");

    // A list stating 2^32-1 strings in a few bytes; bytes after a value.
    for (stored, why) in [
        (&b"\x01\xff\xff\xff\xff"[..], "ends inside its nested value"),
        (b"\x0b\x00", "1 bytes after its nested value"),
    ] {
        let ds = hand_made(
            &["__key__", "tags"],
            &["str", "json"],
            &[vec![b"a", b"[]"], vec![b"b", stored]],
            serde_json::json!({}),
        );
        let o = pack(ds.path(), &out.join("refused"), &[]);
        let stderr = text(&o.stderr);
        assert!(
            !o.status.success()
                && stderr.contains("chunk-0-0.bin")
                && stderr.contains("item 1 leaf `tags` (json)")
                && stderr.contains(why),
            "{stderr}"
        );
        let (code, report) = run_json(&["verify", ds.path().to_str().unwrap()]);
        assert_eq!(code, 1, "{report}");
        assert!(
            report.to_string().contains("item 1 leaf `tags`"),
            "{report}"
        );
    }
}
