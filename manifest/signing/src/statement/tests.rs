use super::parse::normalize;
use super::*;

fn file(name: &str, b: u8) -> Resource {
    Resource::file(name, [b; 32])
}

fn shard(name: &str, start: u64, end: u64, b: u8) -> Resource {
    Resource::shard(name, Span { start, end }, [b; 32])
}

fn names(s: &Statement) -> Vec<String> {
    s.resources.iter().map(Resource::label).collect()
}

#[test]
fn resources_sort_by_components_and_round_trip() {
    let s = Statement::new(
        "model",
        Method::Files,
        vec![
            file("weights-extra.txt", 1),
            file("weights/x", 2),
            file("a", 3),
        ],
        false,
        vec![".git".into()],
    );
    assert_eq!(names(&s), ["a", "weights/x", "weights-extra.txt"]);
    let back = Statement::parse(&s.to_json()).unwrap();
    assert_eq!(back, s);
    let text = String::from_utf8(s.to_json()).unwrap();
    assert!(text.starts_with("{\n  \"_type\": \"https://in-toto.io/Statement/v1\",\n  \"subject\": [\n    {\n      \"name\": \"model\",\n"), "{text}");
    assert!(!text.ends_with('\n'));
    assert!(!text.contains("shard_size"), "{text}");
    let empty = Statement::new("m", Method::Files, vec![], false, vec![]);
    assert!(
        String::from_utf8(empty.to_json())
            .unwrap()
            .contains("\"resources\": []")
    );
}

#[test]
fn shards_sort_by_components_then_offsets_as_numbers_and_round_trip() {
    let method = Method::Shards { shard_size: 1000 };
    let s = Statement::new(
        "model",
        method,
        vec![
            shard("w-x", 0, 10, 1),
            shard("w/a", 1000, 2000, 2),
            shard("w/a", 2000, 2200, 3),
            shard("w/a", 0, 1000, 4),
            shard("b", 0, 5, 5),
        ],
        true,
        vec![],
    );
    // `w/a` before `w-x` (components), 1000 after 0 and before 2000 (numbers, not text:
    // as text "1000" sorts before "200").
    assert_eq!(
        names(&s),
        [
            "b:0:5",
            "w/a:0:1000",
            "w/a:1000:2000",
            "w/a:2000:2200",
            "w-x:0:10"
        ]
    );
    let mut offsets = [shard("f", 200, 300, 0), shard("f", 1000, 1100, 0)];
    sort_resources(&mut offsets);
    assert_eq!(offsets[0].span.unwrap().start, 200);
    assert_eq!(s.files(), 3);
    let text = String::from_utf8(s.to_json()).unwrap();
    assert!(
        text.contains(
            "\"serialization\": {\n      \"method\": \"shards\",\n      \"hash_type\": \"sha256\",\n      \"shard_size\": 1000,\n      \"allow_symlinks\": true\n    }"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "\"name\": \"w/a:1000:2000\",\n        \"algorithm\": \"sha256-sharded-1000\","
        ),
        "{text}"
    );
    let back = Statement::parse(&s.to_json()).unwrap();
    assert_eq!(back, s);
    assert_eq!(back.method.shard_size(), Some(1000));
    // model_signing's API writes the size as a double: the same statement.
    let float = text.replace("\"shard_size\": 1000,", "\"shard_size\": 1000.0,");
    assert_eq!(Statement::parse(float.as_bytes()).unwrap(), s);
}

#[test]
fn cut_gives_model_signing_s_shards() {
    let spans = |size, n| {
        Span::cut(size, n)
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(spans(0, 1000), Vec::<String>::new());
    assert_eq!(spans(8, 1000), ["0..8"]);
    assert_eq!(spans(1000, 1000), ["0..1000"]);
    assert_eq!(
        spans(4096, 1000),
        [
            "0..1000",
            "1000..2000",
            "2000..3000",
            "3000..4000",
            "4000..4096"
        ]
    );
    assert_eq!(spans(u64::MAX, u64::MAX / 2 + 1).len(), 2);
}

/// A shards statement over `resources` as written (names and order kept), with a
/// consistent subject digest.
fn shards_payload(size: &str, resources: &[(&str, u8)]) -> Vec<u8> {
    let parsed: Vec<Resource> = resources.iter().map(|(_, b)| file("x", *b)).collect();
    let listed: Vec<String> = resources
        .iter()
        .map(|(name, b)| {
            format!(
                r#"{{"name": "{name}", "algorithm": "sha256-sharded-1000", "digest": "{}"}}"#,
                shardsmith_manifest::hex(&[*b; 32])
            )
        })
        .collect();
    format!(
        r#"{{"_type": "{STATEMENT_TYPE}", "predicateType": "{PREDICATE_TYPE}",
            "subject": [{{"name": "m", "digest": {{"sha256": "{}"}}}}],
            "predicate": {{"serialization": {{"method": "shards", "hash_type": "sha256",
            "shard_size": {size}, "allow_symlinks": false}}, "resources": [{}]}}}}"#,
        shardsmith_manifest::hex(&root_of(&parsed)),
        listed.join(", ")
    )
    .into_bytes()
}

#[test]
fn shard_sizes_names_and_tilings_that_no_file_has_are_refused() {
    let err = |size: &str, resources: &[(&str, u8)]| {
        Statement::parse(&shards_payload(size, resources))
            .unwrap_err()
            .to_string()
    };
    let ok = [("a:0:1000", 1), ("a:1000:1500", 2), ("./b:0:7", 3)];
    let s = Statement::parse(&shards_payload("1000", &ok)).unwrap();
    assert_eq!(names(&s), ["a:0:1000", "a:1000:1500", "b:0:7"]);
    assert_eq!(
        Statement::parse(&shards_payload("1e3", &ok))
            .unwrap()
            .method,
        Method::Shards { shard_size: 1000 }
    );
    for size in ["1000.5", "0", "0.0", "-1000", "\"1000\"", "null"] {
        assert!(
            err(size, &ok).contains("shard_size is") && err(size, &ok).contains("not a whole"),
            "{size}: {}",
            err(size, &ok)
        );
    }
    for (name, why) in [
        ("a", "not `path:start:end`"),
        ("a:b:0:10", "not `path:start:end`"),
        ("a:0:x", "not byte offsets"),
        ("a:+0:10", "not byte offsets"),
        ("a::10", "not byte offsets"),
        ("a:10:10", "end is not after its start"),
    ] {
        let e = err("1000", &[(name, 1)]);
        assert!(
            e.starts_with(&format!("shard resource `{name}` is malformed: ")) && e.contains(why),
            "{name}: {e}"
        );
    }
    for (resources, want) in [
        (
            &[("a:0:1000", 1), ("a:1000:2001", 2)][..],
            "the shards of `a` do not tile it: bytes 1000..2001: it is 1001 bytes",
        ),
        (
            &[("a:0:999", 1), ("a:999:1000", 2)][..],
            "bytes 0..999: it is 999 bytes, and every shard but a file's last is 1000",
        ),
        (&[("a:1000:1500", 1)][..], "no shard starts at byte 0"),
        (
            &[("a:0:1000", 1), ("a:2000:2100", 2)][..],
            "bytes 2000..2100: no shard covers bytes 1000..2000",
        ),
        (
            &[("a:0:1000", 1), ("a:0:1000", 1)][..],
            "bytes 0..1000: it overlaps the shard that ends at byte 1000",
        ),
    ] {
        let e = err("1000", resources);
        assert!(e.contains(want), "{resources:?}: {e}");
    }
    let e = String::from_utf8(shards_payload("1000", &ok))
        .unwrap()
        .replacen("sha256-sharded-1000", "sha256-sharded-1000.0", 1);
    assert!(
        Statement::parse(e.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("hashed with `sha256-sharded-1000.0`, not `sha256-sharded-1000`")
    );
}

#[test]
fn inconsistent_or_foreign_statements_are_refused() {
    let s = Statement::new("m", Method::Files, vec![file("a", 7)], false, vec![]);
    let text = String::from_utf8(s.to_json()).unwrap();
    let bad_root = text.replace(&shardsmith_manifest::hex(&s.root), &"0".repeat(64));
    assert!(
        Statement::parse(bad_root.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("inconsistent")
    );
    let other = text.replace("\"files\"", "\"tensors\"");
    assert!(
        Statement::parse(other.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("method `tensors`")
    );
    let blake = text.replace("\"hash_type\": \"sha256\"", "\"hash_type\": \"blake2\"");
    assert!(
        Statement::parse(blake.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("hash `blake2`")
    );
    // A files statement's resources are hashed with `sha256`, not a shard algorithm.
    let mixed = text.replace(
        "\"algorithm\": \"sha256\"",
        "\"algorithm\": \"sha256-sharded-1000\"",
    );
    assert!(
        Statement::parse(mixed.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("not `sha256`")
    );
    assert!(
        Statement::parse(b"[]")
            .unwrap_err()
            .to_string()
            .contains("_type")
    );
    assert_eq!(normalize("./a//b/"), "a/b");
    assert_eq!(normalize("."), ".");
}
