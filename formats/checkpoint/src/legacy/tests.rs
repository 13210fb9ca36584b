use super::head::*;
use super::problem::Problem;
use super::walk::*;

/// A legacy file as torch writes it: `{'w': <3 floats>, 'v': <the same tensor>}` with
/// storage key `key_listed` in the key list and `count` in the storage's count.
fn file(key_listed: &str, count: u64) -> Vec<u8> {
    let mut out = LEGACY_MAGIC.to_vec();
    out.push(b'.');
    out.extend_from_slice(b"\x80\x02M\xe9\x03.");
    out.extend_from_slice(b"\x80\x02}.");
    // {'w': _rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', 3), 0, (3,),
    // (1,), False, ()), 'v': <memo 1>}
    out.extend_from_slice(b"\x80\x02}X\x01\x00\x00\x00w");
    out.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage");
    out.extend_from_slice(b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x03tQ");
    out.extend_from_slice(b"K\x00K\x03\x85K\x01\x85\x89)tRq\x01sX\x01\x00\x00\x00vh\x01s.");
    out.extend_from_slice(b"\x80\x02]X");
    out.extend_from_slice(&(key_listed.len() as u32).to_le_bytes());
    out.extend_from_slice(key_listed.as_bytes());
    out.extend_from_slice(b"a.");
    out.extend_from_slice(&count.to_le_bytes());
    for v in [1.0f32, 2.0, 3.0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The walk of `data` fed in pieces of `piece` bytes, and with positioned reads: both
/// must agree.
fn walked(data: &[u8], piece: usize) -> (Vec<Record>, Vec<Problem>) {
    let head = head(data).expect("the pickles read");
    let mut walk = Walk::new(&head);
    for chunk in data[head.end as usize..].chunks(piece) {
        walk.feed(chunk);
    }
    let streamed = walk.finish(data.len() as u64);
    let positioned = walk_at(&head, data.len() as u64, |at, buf| {
        let at = at as usize;
        let n = buf.len().min(data.len().saturating_sub(at));
        buf[..n].copy_from_slice(&data[at..at + n]);
        Ok(n)
    })
    .unwrap();
    assert_eq!(streamed, positioned);
    streamed
}

#[test]
fn a_whole_file_is_one_record_per_storage_and_names_both_aliases() {
    let data = file("0", 3);
    let h = head(&data).unwrap();
    assert_eq!(h.keys, ["0"]);
    let view = &h.contents.views[0];
    assert_eq!(
        (view.name.as_str(), &view.aliases[..]),
        ("w", &["v".to_string()][..])
    );
    assert_eq!(h.contents.names, ["w", "v"]);
    let (records, problems) = walked(&data, 5);
    assert_eq!(problems, []);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].bytes, 12);
    assert_eq!(records[0].data + 12, data.len() as u64);
}

#[test]
fn a_file_cut_anywhere_in_its_storages_is_cut_short() {
    let data = file("0", 3);
    let end = head(&data).unwrap().end as usize;
    for len in end..data.len() {
        for piece in [1, 3, 64] {
            let (_, problems) = walked(&data[..len], piece);
            let [
                Problem::Cut {
                    key,
                    at,
                    end: data_end,
                    missing: 0,
                },
            ] = &problems[..]
            else {
                panic!("cut at {len}: {problems:?}");
            };
            assert_eq!((key.as_str(), *at), ("0", end as u64));
            // Once the count is read, the end of the data is known.
            assert_eq!(data_end.is_some(), len >= end + 8, "cut at {len}");
            assert!(problems[0].message(len as u64).contains("cut short"));
        }
    }
    // Cut inside the pickles: the head cannot be read, and says more bytes could help.
    let e = head(&data[..end - 3]).unwrap_err();
    assert!(e.truncated(), "{e:?}");
}

#[test]
fn counts_keys_and_trailing_bytes_are_checked() {
    let (_, problems) = walked(&file("0", 4), 7);
    assert_eq!(
        problems,
        [Problem::WrongCount {
            key: "0".into(),
            at: head(&file("0", 4)).unwrap().end,
            count: 4,
            declared: 3,
        }]
    );
    // A key no value uses, and a storage the key list leaves out.
    let (_, problems) = walked(&file("9", 3), 7);
    assert_eq!(
        problems,
        [
            Problem::NoRecord {
                key: "0".into(),
                tensor: "w".into()
            },
            Problem::Unknown { key: "9".into() },
        ]
    );
    assert!(problems.iter().all(Problem::is_error));
    let mut data = file("0", 3);
    let len = data.len() as u64;
    data.extend_from_slice(&[0; 5]);
    let (_, problems) = walked(&data, 2);
    assert_eq!(problems, [Problem::Trailing { at: len, bytes: 5 }]);
    assert!(!problems[0].is_error());
}

#[test]
fn a_protocol_version_other_than_1001_is_refused() {
    let mut data = file("0", 3);
    let at = LEGACY_MAGIC.len() + 1 + 3;
    data[at] = 0xea;
    let e = head(&data).unwrap_err();
    assert!(e.message().contains("Invalid protocol version"), "{e:?}");
}
