//! The small files of Energon's `.nv-meta/` (what `energon prepare --split-ratio 1,0,0
//! --sample-type CrudeWebdataset` 7.4.1 writes): `.info.json` (the shards and their
//! sample counts, in `tar_file_id` order), `split.yaml` (every shard in `train`),
//! `dataset.yaml` and `index.uuid`.

use sha2::{Digest, Sha256};

/// The folder of Energon's files, at the dataset's root.
pub const NV_META: &str = ".nv-meta";

/// The Energon version whose files these are (recorded in `.info.json`).
pub const ENERGON_VERSION: &str = "7.4.1";

/// `.info.json`: the version and each shard's sample count, in `tar_file_id` order,
/// laid out as Python's `json.dump(indent=2)` lays it out (no newline at the end).
pub fn info_json(shards: &[(&str, u64)]) -> Vec<u8> {
    let mut text =
        format!("{{\n  \"energon_version\": \"{ENERGON_VERSION}\",\n  \"shard_counts\": {{");
    for (i, (name, count)) in shards.iter().enumerate() {
        let sep = if i == 0 { "" } else { "," };
        text.push_str(&format!("{sep}\n    {}: {count}", ascii_json(name)));
    }
    if !shards.is_empty() {
        text.push_str("\n  ");
    }
    text.push_str("}\n}");
    text.into_bytes()
}

/// `split.yaml`: every shard in `train`, runs of numbered names collapsed into brace
/// ranges as Energon writes them (`shard-{000000..000021}.tar`).
pub fn split_yaml(shards: &[&str]) -> Vec<u8> {
    let mut text = String::from("split_parts:\n  train:\n");
    for pattern in collapse(shards) {
        text.push_str(&format!("  - {}\n", yaml_scalar(&pattern)));
    }
    text.push_str("  val: []\n  test: []\nexclude: []\n");
    text.into_bytes()
}

/// `dataset.yaml` of a `CrudeWebdataset`: samples come out as dictionaries of raw
/// bytes by extension, for the user's cooker to decode.
pub fn dataset_yaml() -> Vec<u8> {
    b"__module__: megatron.energon\n__class__: CrudeWebdataset\n".to_vec()
}

/// `index.uuid`: Energon writes a random one to tell prepared datasets apart in its
/// caches; ours is made from the index's content (the same dataset, the same uuid), laid
/// out as a version-4 uuid.
pub fn index_uuid(content: &[u8]) -> Vec<u8> {
    uuid_of(&Sha256::digest(content))
}

/// [`index_uuid`] of the file at `path`, read in pieces.
pub fn index_uuid_of_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(uuid_of(&hasher.finalize()))
}

fn uuid_of(digest: &[u8]) -> Vec<u8> {
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
    .into_bytes()
}

/// Names collapsed into brace ranges as Energon collapses them (`bracecollapse`, in
/// order): consecutive names with the same text and numbers but for one number, in the
/// same place for the whole run, of the same width and counting up by one, become
/// `shard-{000000..000021}.tar`; any other name stands alone.
pub fn collapse(names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let first = runs(names[i]);
        let mut slot = None;
        let mut j = i + 1;
        while j < names.len() {
            let prev = runs(names[j - 1]);
            let next = runs(names[j]);
            match follows(&prev, &next) {
                Some(s) if slot.is_none_or(|slot| slot == s) => {
                    slot = Some(s);
                    j += 1;
                }
                _ => break,
            }
        }
        match slot {
            Some(slot) if j - i > 1 => {
                let last = runs(names[j - 1]);
                let mut text = String::new();
                for (k, (run, _)) in first.iter().enumerate() {
                    if k == slot {
                        text.push_str(&format!("{{{run}..{}}}", last[k].0));
                    } else {
                        text.push_str(run);
                    }
                }
                out.push(text);
            }
            _ => out.push(names[i].to_string()),
        }
        i = j.max(i + 1);
    }
    out
}

/// `name` cut into runs of digits and of other characters (true: digits).
fn runs(name: &str) -> Vec<(&str, bool)> {
    let mut out: Vec<(&str, bool)> = Vec::new();
    let mut start = 0;
    let bytes = name.as_bytes();
    for k in 1..=bytes.len() {
        if k == bytes.len() || bytes[k].is_ascii_digit() != bytes[start].is_ascii_digit() {
            out.push((&name[start..k], bytes[start].is_ascii_digit()));
            start = k;
        }
    }
    out
}

/// The run in which `next` counts on from `prev` by one (same width), all else equal.
fn follows(prev: &[(&str, bool)], next: &[(&str, bool)]) -> Option<usize> {
    if prev.len() != next.len() {
        return None;
    }
    let mut slot = None;
    for (k, (a, b)) in prev.iter().zip(next).enumerate() {
        if a == b {
            continue;
        }
        let ((a, true), (b, true)) = (a, b) else {
            return None;
        };
        let step = a.parse::<u128>().ok()?.checked_add(1)?;
        if slot.is_some() || a.len() != b.len() || b.parse::<u128>().ok()? != step {
            return None;
        }
        slot = Some(k);
    }
    slot
}

/// A JSON string with every non-ASCII character escaped (Python's `ensure_ascii`).
fn ascii_json(text: &str) -> String {
    let json = serde_json::to_string(text).expect("a string serialises");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// A YAML scalar: plain when it is a safe path, else double-quoted (YAML's double-quoted
/// style reads JSON strings).
fn yaml_scalar(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/{}-".contains(&b))
        && !text.starts_with(['-', '{', '.'])
        && !text.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if safe {
        text.to_string()
    } else {
        ascii_json(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_runs_collapse_and_others_stand_alone() {
        let names = [
            "a.tar",
            "s-000000.tar",
            "s-000001.tar",
            "s-000002.tar",
            "s-000004.tar",
        ];
        assert_eq!(
            collapse(&names),
            ["a.tar", "s-{000000..000002}.tar", "s-000004.tar"]
        );
        assert_eq!(collapse(&["x-9.tar", "x-10.tar"]), ["x-9.tar", "x-10.tar"]);
        // One place counts for the whole run: a second place starts a new one.
        assert_eq!(
            collapse(&["a1-01.tar", "a1-02.tar", "a2-02.tar", "a3-02.tar"]),
            ["a1-{01..02}.tar", "a{2..3}-02.tar"]
        );
        assert_eq!(
            collapse(&["sub/s-000000.tar", "sub/s-000001.tar"]),
            ["sub/s-{000000..000001}.tar"]
        );
    }

    #[test]
    fn uuid_is_laid_out_as_version_4_and_follows_the_content() {
        let a = String::from_utf8(index_uuid(b"a")).unwrap();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert_ne!(index_uuid(b"a"), index_uuid(b"b"));
        assert_eq!(index_uuid(b"a"), index_uuid(b"a"));
    }

    #[test]
    fn info_lists_counts_in_order() {
        let info = info_json(&[("b.tar", 2), ("a.tar", 1)]);
        let value: serde_json::Value = serde_json::from_slice(&info).unwrap();
        assert_eq!(value["energon_version"], ENERGON_VERSION);
        let text = String::from_utf8(info).unwrap();
        assert!(text.find("b.tar") < text.find("a.tar"), "{text}");
        assert_eq!(
            String::from_utf8(info_json(&[("s-000000.tar", 3)])).unwrap(),
            "{\n  \"energon_version\": \"7.4.1\",\n  \"shard_counts\": {\n    \"s-000000.tar\": 3\n  }\n}"
        );
        assert!(
            String::from_utf8(info_json(&[("café.tar", 1)]))
                .unwrap()
                .contains("caf\\u00e9.tar")
        );
        assert_eq!(
            String::from_utf8(split_yaml(&["s-000000.tar", "s-000001.tar"])).unwrap(),
            "split_parts:\n  train:\n  - s-{000000..000001}.tar\n  val: []\n  test: []\nexclude: []\n"
        );
    }
}
