//! One set of assertions for every shard format `pack` writes: the real Python reader
//! reads back every key and byte, shards roll over within `--shard-size` and
//! `--max-samples`, the output is byte-identical for any `--jobs`, a killed run resumes
//! to the same bytes, and `verify` passes the output and names a damaged shard.
//!
//! A new format (or compression) is one line in [`FORMATS`];
//! `formats_table_covers_what_pack_offers` fails until it is there.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::interop;
use crate::util::*;

/// `(name, pack options, shard file suffix, interop script and its arguments)`; the
/// script is run as `SCRIPT INPUT OUTPUT ARGS...`.
#[rustfmt::skip]
const FORMATS: &[(&str, &str, &str, &str)] = &[
    ("webdataset", "", ".tar", "check_webdataset.py"),
    ("webdataset+gz", "--compression gz", ".tar.gz", "check_webdataset_compressed.py gz:6"),
    ("webdataset+zstd", "--compression zstd", ".tar.zst", "check_webdataset_compressed.py zstd:3"),
    ("mds", "--format mds", ".mds", "check_mds.py"),
    ("parquet", "--format parquet", ".parquet", "check_parquet.py"),
    ("hf", "--format hf", ".arrow", "check_hf.py --reader pyarrow"),
    ("litdata", "--format litdata", ".bin", "check_litdata.py"),
];

struct Format {
    name: &'static str,
    options: Vec<&'static str>,
    suffix: &'static str,
    script: Vec<&'static str>,
}

fn formats() -> impl Iterator<Item = Format> {
    FORMATS
        .iter()
        .map(|(name, options, suffix, script)| Format {
            name,
            options: options.split_whitespace().collect(),
            suffix,
            script: script.split_whitespace().collect(),
        })
}

impl Format {
    /// The `pack` arguments for `input` into `output`, then `extra`.
    fn args<'a>(&'a self, input: &'a Path, output: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["pack", input.to_str().unwrap(), output.to_str().unwrap()];
        args.extend(&self.options);
        args.extend(extra);
        args
    }

    /// Packs `input` into `output`; asserts success and returns stderr.
    fn pack(&self, input: &Path, output: &Path, extra: &[&str]) -> String {
        let o = run(&self.args(input, output, extra));
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{}: {stderr}", self.name);
        stderr
    }

    /// `(path, samples)` of every shard the manifest lists, in order.
    fn shards(&self, dir: &Path) -> Vec<(String, u64)> {
        let shards: Vec<(String, u64)> = manifest(dir)["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"].as_str().unwrap().ends_with(self.suffix))
            .map(|f| {
                let path = f["path"].as_str().unwrap().to_string();
                (path, f["samples"].as_u64().unwrap())
            })
            .collect();
        assert!(
            !shards.is_empty(),
            "{}: no {} shard",
            self.name,
            self.suffix
        );
        shards
    }
}

/// The bytes a shard's size limit counts: the file's, or a compressed tar's uncompressed.
fn counted_len(path: &Path) -> u64 {
    let file = std::fs::File::open(path).unwrap();
    let mut out = Vec::new();
    let name = path.to_string_lossy();
    if name.ends_with(".gz") {
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut out)
            .unwrap();
    } else if name.ends_with(".zst") {
        zstd::stream::read::Decoder::new(file)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
    } else {
        return file.metadata().unwrap().len();
    }
    out.len() as u64
}

/// `verify DIR --json`: the exit code and `(kind, path)` of every finding.
fn verify(dir: &Path) -> (i32, Value, Vec<(String, String)>) {
    let (code, report) = run_json(&["verify", dir.to_str().unwrap()]);
    let found = findings(&report).into_iter().map(|f| (f.0, f.1)).collect();
    (code, report, found)
}

#[test]
fn formats_table_covers_what_pack_offers() {
    let help = text(&run(&["pack", "--help"]).stdout);
    // `--format`'s possible values: "  - NAME: summary" lines up to its default.
    let section = &help[help.find("--format <FORMAT>").unwrap()..];
    let section = &section[..section.find("[default:").unwrap()];
    let offered: Vec<String> = section
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- ")?.split_once(':'))
        .map(|(name, _)| name.to_string())
        .collect();
    assert!(offered.len() >= 3, "{section}");
    // webdataset's codecs: "webdataset none|gz[:1-9]|zstd[:1-22] [none];".
    let codecs = &help[help.find("Compression: webdataset ").unwrap() + 24..];
    let codecs = &codecs[..codecs.find(' ').unwrap()];
    let mut wanted = offered.clone();
    for codec in codecs.split('|').map(|c| c.split('[').next().unwrap()) {
        if codec != "none" {
            wanted.push(format!("webdataset+{codec}"));
        }
    }
    assert!(wanted.contains(&"webdataset+gz".to_string()), "{codecs}");
    let mut have: Vec<String> = FORMATS.iter().map(|f| f.0.to_string()).collect();
    wanted.sort();
    have.sort();
    assert_eq!(have, wanted, "one line in FORMATS per format pack offers");
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn real_readers_read_back_every_key_and_byte() {
    if interop::python().is_none() {
        return;
    }
    let input = corpus(50, 6000);
    let out = Tree::new();
    for f in formats() {
        let dir = out.join(f.name);
        f.pack(input.path(), &dir, &["--shard-size", "32KiB"]);
        assert!(f.shards(&dir).len() > 2, "{}: several shards", f.name);
        let mut args = vec![input.path().to_str().unwrap(), dir.to_str().unwrap()];
        args.extend(&f.script[1..]);
        interop::check(f.script[0], &args);
    }
}

#[test]
fn shards_roll_over_within_the_size_and_sample_limits() {
    const LIMIT: u64 = 32 * 1024;
    let input = corpus(60, 6000);
    // One sample over the limit; its key sorts last.
    input
        .file("zz/big.bin", noise(99, 100_000))
        .file("zz/big.json", "{\"label\": 1, \"i\": 99}")
        .file("zz/big.txt", "caption 99");
    let out = Tree::new();
    for f in formats() {
        let dir = out.join(&format!("{}-size", f.name));
        let stderr = f.pack(input.path(), &dir, &["--shard-size", "32KiB"]);
        assert!(
            stderr.contains("warning: sample `zz/big` takes"),
            "{}: {stderr}",
            f.name
        );
        let shards = f.shards(&dir);
        assert!(shards.len() >= 5, "{}: {shards:?}", f.name);
        let over: Vec<usize> = (0..shards.len())
            .filter(|&i| counted_len(&dir.join(&shards[i].0)) > LIMIT)
            .collect();
        assert_eq!(
            over,
            [shards.len() - 1],
            "{}: only the oversize sample's shard is over {LIMIT} bytes: {shards:?}",
            f.name
        );
        assert_eq!(
            shards.last().unwrap().1,
            1,
            "{}: alone in its shard",
            f.name
        );
        let total: u64 = shards.iter().map(|s| s.1).sum();
        assert_eq!(total, 61, "{}", f.name);
        // verify reads the samples in the files themselves.
        let (code, report, _) = verify(&dir);
        assert_eq!(
            (code, &report["samples"]),
            (0, &Value::from(61)),
            "{report}"
        );

        let dir = out.join(&format!("{}-count", f.name));
        f.pack(input.path(), &dir, &["--max-samples", "7"]);
        let counts: Vec<u64> = f.shards(&dir).into_iter().map(|s| s.1).collect();
        assert_eq!(counts, [7, 7, 7, 7, 7, 7, 7, 7, 5], "{}", f.name);
    }
}

#[test]
fn output_is_byte_identical_for_any_jobs_and_seeded_shuffle() {
    let input = corpus(200, 6000);
    let out = Tree::new();
    for f in formats() {
        let pack = |name: &str, extra: &[&str]| {
            let dir = out.join(&format!("{}-{name}", f.name));
            let mut args = vec!["--shard-size", "32KiB"];
            args.extend(extra);
            f.pack(input.path(), &dir, &args);
            snapshot(&dir)
        };
        let j1 = pack("j1", &["-j", "1"]);
        assert!(
            j1.len() > 10,
            "{}: enough shards to run in parallel",
            f.name
        );
        assert!(j1 == pack("j2", &["-j", "2"]), "{}: -j 1 vs -j 2", f.name);
        let shuffled = ["--shuffle", "--seed", "11"];
        let s1 = pack("s1", &[&shuffled[..], &["-j", "1"]].concat());
        for jobs in ["2", "7"] {
            let other = pack(
                &format!("s{jobs}"),
                &[&shuffled[..], &["-j", jobs]].concat(),
            );
            assert!(other == s1, "{}: shuffled, -j 1 vs -j {jobs}", f.name);
        }
        let seed12 = pack("seed12", &["--shuffle", "--seed", "12"]);
        let first = f.shards(&out.join(&format!("{}-s1", f.name)))[0].0.clone();
        assert_ne!(seed12[&first], s1[&first], "{}: another seed", f.name);
        assert_ne!(s1[&first], j1[&first], "{}: shuffled", f.name);
    }
}

#[test]
fn killed_runs_resume_byte_identical() {
    let input = corpus(600, 30_000);
    let out = Tree::new();
    let extra = ["--shard-size", "256KiB", "-j", "2"];
    for f in formats() {
        let reference = out.join(&format!("{}-reference", f.name));
        f.pack(input.path(), &reference, &extra);
        let expected = snapshot(&reference);
        assert!(expected.len() > 20, "{}: {} files", f.name, expected.len());
        let mut kills = 0;
        // Kill as soon as the first shard is on its way, then later.
        for (round, shards_before_kill) in [1usize, 4, 9].into_iter().enumerate() {
            let target = out.join(&format!("{}-killed{round}", f.name));
            let args = f.args(input.path(), &target, &extra);
            let killed = run_and_kill(&args, &target, f.suffix, shards_before_kill);
            if killed {
                kills += 1;
                assert!(!target.join("manifest.json").exists(), "{}", f.name);
            }
            f.pack(input.path(), &target, &extra);
            assert!(
                snapshot(&target) == expected,
                "{} round {round} (killed: {killed}): differs from an uninterrupted run",
                f.name
            );
        }
        assert!(
            kills > 0,
            "{}: no run was killed before it finished",
            f.name
        );
    }
}

#[test]
fn verify_passes_the_output_and_names_a_damaged_shard() {
    let input = corpus(60, 6000);
    let out = Tree::new();
    for f in formats() {
        let clean = out.join(&format!("{}-clean", f.name));
        f.pack(input.path(), &clean, &["--shard-size", "32KiB"]);
        let (code, report, found) = verify(&clean);
        assert_eq!((code, found.len()), (0, 0), "{}: {report}", f.name);
        assert_eq!(report["samples"], 60, "{}: {report}", f.name);

        let shards = f.shards(&clean);
        let shard = shards[shards.len() / 2].0.clone();
        let damage = |name: &str, change: &dyn Fn(&mut Vec<u8>)| {
            let dir = out.join(&format!("{}-{name}", f.name));
            copy_dir(&clean, &dir);
            let mut bytes = std::fs::read(dir.join(&shard)).unwrap();
            change(&mut bytes);
            std::fs::write(dir.join(&shard), bytes).unwrap();
            let (code, report, found) = verify(&dir);
            assert_eq!(code, 1, "{} {name}: {report}", f.name);
            assert!(
                found.iter().all(|(_, path)| *path == shard),
                "{} {name}: findings name only `{shard}`: {found:?}",
                f.name
            );
            found.into_iter().map(|(kind, _)| kind).collect::<Vec<_>>()
        };
        let kinds = damage("flipped", &|b| {
            let middle = b.len() / 2;
            b[middle] ^= 0x10;
        });
        assert!(
            kinds.contains(&"hash_mismatch".into()),
            "{}: {kinds:?}",
            f.name
        );
        let kinds = damage("truncated", &|b| b.truncate(b.len() / 2));
        assert!(
            kinds.contains(&"size_mismatch".into()),
            "{}: {kinds:?}",
            f.name
        );
        assert!(kinds.contains(&"truncated".into()), "{}: {kinds:?}", f.name);
    }
}
