//! `pack` arguments.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use shardsmith_shard::FormatKind;

use crate::size::{parse_count, parse_size};

/// `--format`: the shard formats of the registry, with their summaries as help.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = FormatKind> {
    let values = FormatKind::all().map(|kind| {
        PossibleValue::new(kind.name())
            .help(kind.def().summary())
            .aliases(kind.def().aliases())
    });
    PossibleValuesParser::new(values)
        .map(|name: String| FormatKind::from_name(&name).expect("a registered name"))
}

/// What INPUT holds (`--input-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormatArg {
    /// Told from the files.
    Auto,
    /// A tree of raw files.
    Files,
    /// A dataset of one of the registry's formats.
    Format(FormatKind),
}

/// `--input-format`: `auto`, `files`, then the registry's formats with what an input of
/// each is as help.
fn input_format_parser() -> impl clap::builder::TypedValueParser<Value = InputFormatArg> {
    let fixed = [
        PossibleValue::new("auto").help(
            "Told from the files: MDS when INPUT has an MDS index.json, Parquet when it holds only .parquet files, WebDataset when only tar shards (or INPUT is a brace pattern), else raw files",
        ),
        PossibleValue::new("files").help("A tree of raw files, grouped into samples by name"),
    ];
    let formats = FormatKind::all().map(|kind| {
        PossibleValue::new(kind.name())
            .help(kind.def().input_summary())
            .aliases(kind.def().aliases())
    });
    PossibleValuesParser::new(fixed.into_iter().chain(formats)).map(|name: String| {
        match name.as_str() {
            "auto" => InputFormatArg::Auto,
            "files" => InputFormatArg::Files,
            format => {
                InputFormatArg::Format(FormatKind::from_name(format).expect("a registered name"))
            }
        }
    })
}

/// What goes before the keys of each input file's samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeyPrefixArg {
    /// Keys as the input gives them
    None,
    /// FILE/KEY, FILE the file's name without its extension (train.0 for train.0.parquet)
    Stem,
    /// PATH/KEY, PATH the file's path below INPUT without its extension
    Path,
}

/// Content checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ValidateArg {
    /// No content checks
    None,
    /// JSON must parse; JPEG/PNG/WebP/GIF must have start and end markers
    Cheap,
    /// Also decode every JPEG and PNG (slow)
    Full,
}

#[derive(Debug, Args)]
pub struct PackArgs {
    /// Directory tree of raw files (images, text, JSON labels, ...), or Parquet files
    pub input: PathBuf,

    /// Output directory for the shards, manifest.json and SHA256SUMS (created if needed)
    pub output: PathBuf,

    /// Shard format
    #[arg(long, default_value = "webdataset", value_parser = format_parser())]
    pub format: FormatKind,

    /// What INPUT holds: raw files, Parquet rows, WebDataset shards or an MDS dataset
    ///
    /// Parquet rows keep their order; the key is the --key-column value, else PATH/ROW
    /// (the file's path without .parquet); every other column is a field (nulls are
    /// absent fields; lists, maps and structs their JSON text). WebDataset
    /// shards (a directory, one shard, a brace pattern such as
    /// 'shards/shard-{000000..000146}.tar' or --files-from naming shards) give their
    /// samples in shard order, keyed as webdataset keys them. An MDS dataset gives its
    /// samples in index order; typed columns keep their type where the output has types.
    /// Examples: `shardsmith pack ./c4-parquet ./c4-mds --format mds`, `shardsmith pack
    /// 'wds/shard-{000000..000146}.tar' ./mds --format mds --shard-size 64MiB`.
    #[arg(long, value_parser = input_format_parser(), default_value = "auto", value_name = "KIND")]
    pub input_format: InputFormatArg,

    /// Pack only the files listed in LIST (one path relative to INPUT per line; a file, an object URL, or `-` for stdin)
    ///
    /// A line `PATH<TAB>SIZE` gives the file's size too, which is then not asked of the
    /// file system or store (each read still checks it): the tasks of a split run share
    /// one listing made once, by `shardsmith list INPUT -o LIST` or `find`. For an
    /// object store INPUT every line gives its size. Example: `(cd raw && find train
    /// -type f) > train.txt` then `shardsmith pack raw shards --files-from train.txt`.
    #[arg(long, value_name = "LIST")]
    pub files_from: Option<PathBuf>,

    /// Largest shard file, headers and padding included [default: 256MiB; mds: 64MiB]
    ///
    /// The real file size stays within the limit (for MDS: the uncompressed shard, as
    /// MDSWriter's size_limit; for compressed WebDataset shards: the uncompressed tar, as
    /// ShardWriter's maxsize); a single sample larger than the limit gets a shard of its
    /// own, with a warning. At least 4KiB (4,096 bytes). Units: k/M/G ×1000, Ki/Mi/Gi ×1024.
    /// Example: `--shard-size 1GiB`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub shard_size: Option<u64>,

    /// Most samples per shard (underscores allowed: 10_000)
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub max_samples: Option<u64>,

    /// Shard name prefix: shards are PREFIX-000000.tar, PREFIX-000001.tar, ...
    ///
    /// MDS names are fixed by its readers (shard.00000.mds) and take no prefix.
    #[arg(long, default_value = "shard")]
    pub prefix: String,

    /// Pack only these fields (comma-separated); files of other fields are not inputs
    ///
    /// Useful when samples differ in their fields and the format has fixed columns (MDS
    /// cannot store a missing value). Example: `--fields jpg,json`.
    #[arg(long, value_name = "LIST")]
    pub fields: Option<String>,

    /// Encoding of a field's column (mds, parquet), repeatable: FIELD:ENCODING
    ///
    /// Defaults: `json` → json, text fields (txt, caption, ...) → str, others → bytes.
    /// Encodings: bytes, str, json, jpeg, png, int, int8..int64, uint8..uint64,
    /// float16/32/64, str_int, str_float, str_decimal, ndarray[:DTYPE[:SHAPE]] (from .npy
    /// files). Example: `--column jpg:jpeg --column cls:int --column emb:ndarray:float32:768`.
    #[arg(long, value_name = "FIELD:ENCODING")]
    pub column: Vec<String>,

    /// Name of the column that holds each sample's key (mds, parquet; also read from Parquet input)
    #[arg(long, default_value = "key", value_name = "NAME")]
    pub key_column: String,

    /// Put each input file's name or path before the keys of its samples (Parquet, WebDataset, MDS input)
    ///
    /// Two samples with one key stop the run (exit 2) naming both: readers would merge
    /// them (webdataset joins consecutive members of one key) or return one key twice.
    /// Inputs of several files often reuse keys (an `id` column counting from 0 in each
    /// Parquet file, tar shards from two jobs): `stem` makes each key FILE/KEY, FILE the
    /// file's name without its extension (`train.0` for `train.0.parquet`,
    /// `shard-000001` for `shard-000001.tar.gz`); `path` uses the file's path below INPUT
    /// instead, for files of one name in different directories. Keys the input does not
    /// give (a Parquet row number, an MDS sample index) are unique already and stay as
    /// they are. Example: `shardsmith pack parts/ out --key-column id --key-prefix stem`.
    #[arg(long, value_enum, default_value = "none", value_name = "PREFIX")]
    pub key_prefix: KeyPrefixArg,

    /// Compression: webdataset none|gz[:1-9]|zstd[:1-22] [none]; mds none|zstd[:L]|gz[:L]|bz2[:L]|br[:L]|snappy [none]; parquet zstd[:L]|snappy|none [zstd]
    ///
    /// webdataset: each shard compressed whole, PREFIX-NNNNNN.tar.gz (gz, level 6 unless
    /// given) or .tar.zst (zstd, level 3); --shard-size counts the uncompressed tar, as
    /// ShardWriter's maxsize does; the bytes are the same for any --jobs. webdataset 1.0.2
    /// reads .tar.gz. It reads .tar.zst only where Python's tarfile knows zstd (3.14+):
    /// not on Python 3.11, where it fails with ReadError. wids reads neither (it maps
    /// plain tars). MDS names are MDSWriter's; the level never appears in file names.
    /// Examples: `--compression gz` (webdataset), `--compression zstd:7` (mds).
    #[arg(long, value_name = "CODEC")]
    pub compression: Option<String>,

    /// Readers' indexes to write beside the shards, in the same pass (webdataset): wids, dali, energon, or all
    ///
    /// Comma-separated, listed in the manifest, the same bytes for any --jobs. `wids`:
    /// wids-index.json, the shard list `wids.ShardListDataset` opens for random access,
    /// as `widsindex create` would write it (no md5sum: wids does not need it). `dali`:
    /// dali/NAME.idx per shard, as DALI's `wds2idx` writes it, for
    /// `fn.readers.webdataset(index_paths=...)`. `energon`: `.nv-meta/` and
    /// NAME.tar.idx per shard, as `energon prepare --split-ratio 1,0,0 --sample-type
    /// CrudeWebdataset` writes them, so Megatron-Energon loads the dataset without
    /// `energon prepare`. `all`: all three. No reader reads compressed shards through an
    /// index, so --index is refused with --compression. For shards that exist already:
    /// `shardsmith index`. Example: `--index all`.
    #[arg(long, value_name = "LIST")]
    pub index: Option<String>,

    /// Hashes recorded in index.json for StreamingDataset's validate_hash (mds) [default: xxh64]
    ///
    /// Comma-separated: md5, sha1, sha224, sha256, sha384, sha512, sha3_224..sha3_512,
    /// blake2b, blake2s, xxh32, xxh64, xxh3_64, xxh3_128, xxh128. Example: `--hashes sha1,xxh64`.
    #[arg(long, value_name = "LIST")]
    pub hashes: Option<String>,

    /// Rows per Parquet row group, or a byte size with a unit [default: 1048576 rows or 128MiB]
    ///
    /// Example: `--row-group-size 4096` (rows) or `--row-group-size 64MiB` (bytes).
    #[arg(long, value_name = "N|SIZE")]
    pub row_group_size: Option<String>,

    /// Shuffle the sample order before sharding (deterministic: see --seed)
    ///
    /// Readers can only shuffle shards and small buffers; a global shuffle at pack time
    /// mixes classes across shards.
    #[arg(long)]
    pub shuffle: bool,

    /// Seed of --shuffle; the same seed always gives the same order [default: 0]
    #[arg(long, value_name = "N", requires = "shuffle", value_parser = parse_count)]
    pub seed: Option<u64>,

    /// How to check file contents before packing [default: cheap for raw files, none
    /// when converting WebDataset, MDS or Parquet]
    ///
    /// A file that fails is left out with its whole sample and listed (an error with
    /// --strict). A conversion keeps every sample its readers read, whatever bytes a
    /// field holds, unless asked. Example: `--validate full` decodes every JPEG and PNG.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub validate: Option<ValidateArg>,

    /// Fail instead of leaving out any input (bad names, unreadable files, bad content)
    #[arg(long)]
    pub strict: bool,

    /// Leave out every sample whose fields equal an earlier sample's, byte for byte
    ///
    /// All fields count, names and bytes; the key does not. The first occurrence is
    /// kept where it is; the summary, --json and the manifest's "duplicates" give the
    /// count and bytes and list each duplicate with the key it repeats (the first
    /// 1,000). Decided while the shards are written, in input order, so the output is
    /// the same for any --jobs. Costs a 128-bit hash of each sample's bytes and about
    /// 48 bytes of memory per kept sample. In a split run each task leaves out the
    /// duplicates within its own share, and `merge` counts those across shares.
    /// Example: `--dedup`.
    #[arg(long)]
    pub dedup: bool,

    /// Replace a different dataset already in OUTPUT (only shardsmith's own files are removed)
    #[arg(long)]
    pub force: bool,

    /// Directory for transformed images and decompressed input shards until their shard is written [default: the output directory, or the system's temporary directory for an object store]
    ///
    /// Every image is transformed once, before the shards are planned (the plan needs
    /// their sizes); the scratch file holds about the output's size. Compressed input
    /// shards (`.tar.gz`, `.tar.zst`, compressed MDS shards) are decompressed once into
    /// scratch files, so they can be read in any order. Scratch files have no name and
    /// vanish when the run ends, however it ends. Example: `--scratch-dir /local/nvme`.
    #[arg(long, value_name = "DIR")]
    pub scratch_dir: Option<std::path::PathBuf>,

    // Last: a flattened group's heading goes on to every flag after it.
    #[command(flatten)]
    pub images: super::images::ImageArgs,

    #[command(flatten)]
    pub task: super::task::TaskArgs,
}
