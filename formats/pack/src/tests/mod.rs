use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::tree::FileTree;
use shardsmith_manifest::sha256_hex;
use shardsmith_manifest::{MANIFEST_FILE, SUMS_FILE};
use shardsmith_shard::{FormatChoice, FormatKind, FormatOptions};
use shardsmith_store::Result as StoreResult;
use shardsmith_store::{
    InputListing, InputSource, LocalDir, LocalTree, RangeRead, ReadError, ShardFile,
};

fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, data) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
    dir
}

fn corpus(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let class = dir.path().join(format!("c{}", i % 3));
        std::fs::create_dir_all(&class).unwrap();
        std::fs::write(
            class.join(format!("{i:04}.bin")),
            vec![i as u8; 100 + i * 37],
        )
        .unwrap();
        std::fs::write(
            class.join(format!("{i:04}.json")),
            format!("{{\"i\": {i}}}"),
        )
        .unwrap();
    }
    dir
}

/// What a test run is given: the shard size (which lives with the format) and the
/// pack settings.
#[derive(Clone)]
struct Opts {
    shard_size: u64,
    pack: PackSettings,
}

impl Opts {
    fn with(mut self, change: impl FnOnce(&mut PackSettings)) -> Self {
        change(&mut self.pack);
        self
    }

    fn wds(&self) -> FormatChoice {
        let options = FormatOptions {
            shard_size: Some(self.shard_size),
            ..FormatOptions::default()
        };
        FormatChoice::new(FormatKind::from_name("webdataset").unwrap(), &options).unwrap()
    }
}

fn settings(shard_size: u64) -> Opts {
    Opts {
        shard_size,
        pack: PackSettings::default(),
    }
}

fn run(input: &Path, output: &Path, settings: &Opts) -> Result<PackReport> {
    let sink = LocalDir::create(output).unwrap();
    pack(
        &FileTree::new(&LocalTree::new(input)),
        &sink,
        &settings.wds(),
        &settings.pack,
        &NoProgress,
    )
}

/// Samples `k0`, `k1`, ... of one `bin` field of each size.
pub(crate) fn sized(sizes: &[u64]) -> Vec<shardsmith_shard::SampleSpec> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| shardsmith_shard::SampleSpec {
            origin: 0,
            key: format!("k{i}"),
            fields: vec![shardsmith_shard::FieldSpec::new("bin", size)],
        })
        .collect()
}

/// Every file of a directory with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Members of a shard as (name, bytes).
fn members(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).unwrap();
    tar::Archive::new(file)
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), data)
        })
        .collect()
}

mod crash;
mod inputs;
pub(crate) mod left_out;
mod output;
mod rerun;
