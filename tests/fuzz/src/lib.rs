//! What the fuzz targets share: a scratch directory per process (several inspectors
//! read the file, or a file beside it, from disk, as they do under `verify`), feeding an
//! inspector in blocks of varying sizes, splitting one input into several files, and
//! running the whole `verify` entry point.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use shardsmith_inspect::{CheckpointOptions, InspectorsWith};
use shardsmith_manifest::scan::READ_BLOCK;
use shardsmith_manifest::verify::{VerifyOptions, VerifyReport, verify_path};
use shardsmith_manifest::{
    FileContext, FileEntry, Finding, Inspection, Inspector, InspectorFactory, Manifest,
};

/// The inspectors `verify --scan-values` uses.
pub const INSPECTORS: InspectorsWith = InspectorsWith(CheckpointOptions { scan_values: true });

/// Separates the files of one input in multi-file targets (also in the dictionaries).
pub const SPLIT: &[u8] = b"--shardsmith-fuzz-split--";

/// Crates whose panics on malformed data the code under test catches and reports
/// (`shardsmith_shard::parquet::guarded`). libFuzzer's panic hook aborts on every
/// panic before it unwinds; theirs must reach that guard. A panic of theirs that no
/// guard catches still ends the run (libfuzzer-sys aborts on an unwound panic).
const GUARDED_CRATES: [&str; 2] = ["/parquet-", "/arrow-"];

fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let guarded = info
                .location()
                .is_some_and(|l| GUARDED_CRATES.iter().any(|c| l.file().contains(c)));
            if !guarded {
                fuzzer_hook(info);
            }
        }));
    });
}

/// An empty directory for this run, the same path every run of this process. Under
/// `$SHARDSMITH_FUZZ_TMP` when set (run.sh points it at its own work directory), else
/// under the system's temporary directory.
pub fn scratch() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    init();
    let root = ROOT.get_or_init(|| {
        let base = std::env::var_os("SHARDSMITH_FUZZ_TMP")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        base.join(format!("shardsmith-fuzz-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).expect("the scratch directory can be created");
    root.clone()
}

/// Splits `data` at every [`SPLIT`] into at most `n` parts (the last takes the rest);
/// missing parts are empty.
pub fn split(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = data;
    while parts.len() + 1 < n {
        match rest.windows(SPLIT.len()).position(|w| w == SPLIT) {
            Some(at) => {
                parts.push(&rest[..at]);
                rest = &rest[at + SPLIT.len()..];
            }
            None => break,
        }
    }
    parts.push(rest);
    parts.resize(n, &[]);
    parts
}

/// The blocks `data` is fed in: sizes from 1 byte to the whole input, chosen by a PRNG
/// seeded from the input itself (so a crash reproduces), to exercise every inspector's
/// handling of a structure split across blocks.
pub fn blocks(data: &[u8]) -> Vec<&[u8]> {
    let mut state = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    }) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let r = next();
        let n = match r % 5 {
            0 => 1 + (r >> 8) % 7,
            1 => 1 + (r >> 8) % 600,
            2 => 1 + (r >> 8) % 9000,
            3 => 512,
            _ => rest.len() as u64,
        } as usize;
        let (block, tail) = rest.split_at(n.min(rest.len()));
        out.push(block);
        rest = tail;
    }
    out
}

/// Writes `data` to `root/rel` (creating directories).
pub fn write(root: &Path, rel: &str, data: &[u8]) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("scratch directories can be created");
    }
    std::fs::write(&path, data).expect("scratch files can be written");
}

/// Feeds `data` to `inspector` in [`blocks`] and finishes it.
pub fn run(mut inspector: Box<dyn Inspector>, data: &[u8]) -> Inspection {
    init();
    for block in blocks(data) {
        inspector.update(block);
    }
    inspector.finish()
}

/// Writes `data` to `root/rel` and runs the inspector `verify` would choose for it (with
/// `entry` and `manifest` as context), as `verify` does but in varying blocks.
pub fn inspect(
    root: &Path,
    rel: &str,
    data: &[u8],
    entry: Option<&FileEntry>,
    manifest: Option<&Manifest>,
) -> Option<Inspection> {
    write(root, rel, data);
    inspect_written(root, rel, data, entry, manifest)
}

/// [`inspect`] of a file already written.
pub fn inspect_written(
    root: &Path,
    rel: &str,
    data: &[u8],
    entry: Option<&FileEntry>,
    manifest: Option<&Manifest>,
) -> Option<Inspection> {
    let ctx = FileContext {
        root,
        path: rel,
        entry,
        manifest,
    };
    let head = &data[..data.len().min(READ_BLOCK)];
    let inspector = INSPECTORS.inspector_for(&ctx, head)?;
    Some(run(inspector, data))
}

/// The dataset-level checks over what the inspectors found.
pub fn layout(root: &Path, files: &[(&str, &[u8])], inspections: &[(&str, Inspection)]) {
    let sizes: BTreeMap<String, u64> = files
        .iter()
        .map(|(rel, data)| ((*rel).to_string(), data.len() as u64))
        .collect();
    let inspections: BTreeMap<String, Inspection> = inspections
        .iter()
        .map(|(rel, i)| ((*rel).to_string(), i.clone()))
        .collect();
    let findings: Vec<Finding> = INSPECTORS.check_layout(root, &sizes, &inspections, None);
    render(&findings);
}

/// An entry recording `format` for `rel`, as a manifest written by shardsmith has.
pub fn entry(rel: &str, data: &[u8], format: &str) -> FileEntry {
    let mut digester = shardsmith_manifest::Digester::new(1 << 20);
    digester.update(data);
    let mut entry = FileEntry::new(rel, &digester.finish());
    entry.format = Some(format.to_string());
    entry
}

/// The whole `verify` entry point on `path` (a file or a directory), with the real
/// inspectors and value scans; the report is rendered as `--json` would.
pub fn verify(path: &Path) -> Option<VerifyReport> {
    let options = VerifyOptions {
        manifest: None,
        expect_root: None,
        inspectors: &INSPECTORS,
        allow_empty: false,
        collect_digests: true,
        digest_check: None,
    };
    let report = verify_path(path, &options, &|_| {}, &|_| {}).ok()?;
    render(&report);
    Some(report)
}

/// Renders `value` as the CLI's `--json` does (findings carry numbers and text from
/// the file; rendering must not fail on any of them).
pub fn render<T: serde::Serialize + ?Sized>(value: &T) {
    serde_json::to_vec(value).expect("reports always serialize");
}

/// Largest single allocation a target may make, and most memory it may hold at once.
/// libFuzzer's `-malloc_limit_mb` needs a sanitizer's malloc hooks; this allocator
/// enforces the same bound in any build (`--sanitizer none` too), and counts only what
/// the code under test allocates (libFuzzer's own memory is not Rust's).
pub const MAX_ALLOC: usize = 256 << 20;
/// See [`MAX_ALLOC`].
pub const MAX_LIVE: usize = 512 << 20;

mod limit {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{MAX_ALLOC, MAX_LIVE};

    static LIVE: AtomicUsize = AtomicUsize::new(0);

    struct Limited;

    fn over(what: &str, size: usize) -> ! {
        // No formatting machinery that could allocate: plain writes, then abort, which
        // libFuzzer reports as a crash and saves the input.
        let mut err = std::io::stderr();
        let _ = err.write_all(b"==shardsmith-fuzz== allocation limit exceeded: ");
        let _ = err.write_all(what.as_bytes());
        let mut digits = [0u8; 20];
        let mut n = size;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let _ = err.write_all(&digits[at..]);
        let _ = err.write_all(b" bytes\n");
        std::process::abort();
    }

    fn take(size: usize) {
        if size > MAX_ALLOC {
            over("one allocation of ", size);
        }
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        if live > MAX_LIVE {
            over("live memory of ", live);
        }
    }

    // SAFETY: every call is forwarded to `System` unchanged; only sizes are counted.
    unsafe impl GlobalAlloc for Limited {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            take(layout.size());
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            take(layout.size());
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            take(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static ALLOCATOR: Limited = Limited;
}

/// Renders what an inspection reports, as `verify --json` would.
pub fn report(inspection: Option<&Inspection>) {
    if let Some(i) = inspection {
        render(&(
            &i.format,
            i.samples,
            &i.first_key,
            &i.last_key,
            &i.facts,
            &i.findings,
        ));
    }
}

/// What `pack`, `ls` and `cat` ask of an input, on every sample: its suggested encodings,
/// its listing, each sample's container and field paths, then every sample loaded in
/// order (until one fails).
pub fn read_all(source: &dyn shardsmith_shard::sample::SampleSource) {
    let _ = source.suggested_encodings();
    let Ok(listing) = source.samples() else {
        return;
    };
    for sample in &listing.samples {
        let _ = source.container(sample);
        for field in &sample.fields {
            let _ = source.field_path(sample, field);
        }
    }
    let validation = shardsmith_shard::content::Validation::Full;
    if let Ok(mut reader) = source.reader(&listing.samples, validation) {
        let mut buf = Vec::new();
        for i in 0..listing.samples.len() {
            buf.clear();
            if reader.load(i, &mut buf).is_err() {
                break;
            }
        }
    }
}
