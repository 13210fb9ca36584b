//! Hostile checkpoints: pickles that would run code, absurd declared sizes, deep
//! nesting, overlapping zip members. Each gets a clear finding; nothing is executed,
//! nothing crashes, nothing allocates what a header claims.

use crate::checkpoint::basic::{copy, finding, verify};
use crate::util::*;

#[test]
fn pickles_that_would_run_code_are_reported_and_never_executed() {
    let t = copy("pickles");
    let marker = t.join("PWNED");
    // os.system("touch <marker>") as a protocol-2 pickle, in a .pkl and as a .pt's data.pkl.
    let cmd = format!("touch {}", marker.display());
    let mut evil = b"\x80\x02cposix\nsystem\nX".to_vec();
    evil.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
    evil.extend_from_slice(cmd.as_bytes());
    evil.extend_from_slice(b"\x85R.");
    t.file("touch.pkl", &evil);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    for file in ["evil.pkl", "evil.pt", "touch.pkl"] {
        let f = finding(&report, "unsafe_pickle", file);
        assert!(
            f["message"].as_str().unwrap().contains("`posix.system`"),
            "{f}"
        );
        assert_eq!(f["severity"], "error");
    }
    assert!(!marker.exists(), "the pickle was executed");
    // A plain data pickle is fine.
    assert!(
        !report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "data.pkl")
    );
}

#[test]
fn framework_classes_are_a_warning_not_an_error() {
    // torch.save(model) style: a torch.nn module class needs weights_only=False.
    let p = b"\x80\x02ctorch.nn.modules.linear\nLinear\n)\x81}b.";
    let t = Tree::new();
    t.file("model.pkl", p);
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        finding(&report, "unsafe_pickle", "model.pkl")["severity"],
        "warning"
    );
}

#[test]
fn deep_nesting_and_truncated_pickles_are_findings() {
    let t = Tree::new();
    // Lists nested 500,000 deep: valid, and read without recursion.
    let mut deep = b"\x80\x02".to_vec();
    deep.extend(std::iter::repeat_n(b'(', 500_000));
    deep.extend(std::iter::repeat_n(b'l', 500_000));
    deep.extend_from_slice(b".");
    t.file("deep.pkl", &deep);
    t.file("cut.pkl", b"\x80\x02}q\x00(X\x05\x00\x00\x00ab");
    t.file("huge.pkl", b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f");
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    for file in ["cut.pkl", "huge.pkl"] {
        finding(&report, "bad_pickle", file);
    }
    assert!(
        !report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "deep.pkl"),
        "{report:#}"
    );
}

#[test]
fn absurd_sizes_in_headers_are_findings_not_allocations() {
    let t = copy("plain");
    // safetensors: a 100 GB header length.
    let path = t.join("model.safetensors");
    let mut b = std::fs::read(&path).unwrap();
    b[..8].copy_from_slice(&100_000_000_000u64.to_le_bytes());
    std::fs::write(&path, b).unwrap();
    // torch zip: the zip64 end record claims a 1 TB central directory.
    let path = t.join("model.pt");
    let mut b = std::fs::read(&path).unwrap();
    let z = b.len() - 98;
    b[z + 40..z + 48].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&path, b).unwrap();
    let (code, report) = verify(t.path(), &[]);
    assert_eq!(code, 1);
    assert!(
        finding(&report, "bad_header", "model.safetensors")["message"]
            .as_str()
            .unwrap()
            .contains("header too large")
    );
    finding(&report, "bad_header", "model.pt");
}

#[test]
fn overlapping_zip_members_are_reported() {
    // Two central-directory entries naming the same local header: the classic
    // overlapping-member zip bomb. The second one starts inside the first.
    let t = copy("plain");
    let path = t.join("model.pt");
    let mut b = std::fs::read(&path).unwrap();
    let n = b.len();
    let cd_start = {
        let z = n - 98;
        u64::from_le_bytes(b[z + 48..z + 56].try_into().unwrap()) as usize
    };
    // Point data/1's entry (the 6th) at data/0's local header (offset 1238).
    let mut at = cd_start;
    for _ in 0..5 {
        let (nl, el, cl) = (
            u16::from_le_bytes([b[at + 28], b[at + 29]]) as usize,
            u16::from_le_bytes([b[at + 30], b[at + 31]]) as usize,
            u16::from_le_bytes([b[at + 32], b[at + 33]]) as usize,
        );
        at += 46 + nl + el + cl;
    }
    b[at + 42..at + 46].copy_from_slice(&1238u32.to_le_bytes());
    std::fs::write(&path, b).unwrap();
    let (code, report) = verify(&path, &[]);
    assert_eq!(code, 1);
    let overlaps = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "bad_header")
        .count();
    assert!(overlaps >= 1, "{report:#}");
}

#[test]
fn c9_declared_storage_size_disagreeing_with_the_record_is_reported() {
    // data.pkl says storage `0` (tensor `w`) has 8192 f32 elements: make it 12288, the
    // mismatch behind CVE-2026-24747. The edited data.pkl also fails its CRC.
    let t = copy("plain");
    let path = t.join("model.pt");
    let mut b = std::fs::read(&path).unwrap();
    let at = b.windows(4).position(|w| w == b"M\x00\x20t").unwrap();
    b[at + 2] = 0x30;
    std::fs::write(&path, b).unwrap();
    let (code, report) = verify(&path, &[]);
    assert_eq!(code, 1);
    let f = finding(&report, "bad_tensor", "model.pt");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("declares a storage of 49152 bytes"),
        "{f}"
    );
    assert_eq!(
        (f["expected"].as_str(), f["actual"].as_str()),
        (Some("49152"), Some("32768"))
    );
    let crc = finding(&report, "crc_mismatch", "model.pt");
    assert!(crc["message"].as_str().unwrap().contains("data.pkl"));
}
