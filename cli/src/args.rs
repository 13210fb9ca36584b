//! Command-line definitions. The first line of each doc comment is the `-h` text; the
//! rest appears with `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::size::{parse_count, parse_size};

/// Prepare and guard the data of GPU training runs: pack small files into shards, tokenize
/// text, write SHA-256 manifests, verify datasets and checkpoints before training.
#[derive(Debug, Parser)]
#[command(
    name = "shardsmith",
    version,
    propagate_version = true,
    max_term_width = 100
)]
#[command(
    after_help = "Examples:\n  shardsmith pack ./raw ./shards --format webdataset --shard-size 1GiB\n  shardsmith tokenize ./c4 ./tokens --tokenizer cl100k_base --format megatron\n  shardsmith verify ./shards\n  shardsmith manifest ./checkpoints/step_4000\n  shardsmith audit ./checkpoints\n\nExit codes: 0 success or clean, 1 verification found problems, 2 could not run."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Worker threads [default: all cores]
    ///
    /// Output is byte-identical whatever the value. Example: `-j 4`.
    #[arg(short, long, global = true, value_name = "N")]
    pub jobs: Option<usize>,

    /// No progress bar and no summary; errors and warnings still go to stderr
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// Per-file detail on stderr (every input left out, with the reason)
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// Print one machine-readable JSON report on stdout instead of the summary
    ///
    /// Keys are stable snake_case, sizes in bytes, durations in seconds. Example:
    /// `shardsmith verify shards --json | jq .findings`.
    #[arg(long, global = true)]
    pub json: bool,

    /// Never draw a progress bar (bars are drawn only when stderr is a terminal)
    #[arg(long, global = true)]
    pub no_progress: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Pack a directory of raw files into training shards, with a manifest
    ///
    /// Files are grouped into samples as WebDataset readers group tar members: the key
    /// is the path up to the first dot of the file name, the field is the rest,
    /// lowercased (`cat/0001.jpg` + `cat/0001.json` → sample `cat/0001` with fields
    /// `jpg` and `json`). Inputs readers would mis-read are left out and listed, or
    /// refused with --strict. Symlinks to files are packed as regular files; symlinks
    /// to directories are not followed.
    ///
    /// A killed run resumes when re-run with the same arguments, and ends byte-identical
    /// to an uninterrupted run.
    ///
    /// Example: shardsmith pack ./raw ./shards --format webdataset --shard-size 1GiB
    Pack(Box<PackArgs>),

    /// Tokenize text (JSONL, Parquet, text files) into binary token files, with a manifest
    ///
    /// Documents are read in order from JSONL files (plain, .gz or .zst; the text under
    /// --field), Parquet files (the --field column) and plain-text files (one document
    /// each), given as files, directories or both. Token ids equal the reference
    /// tokenizers' (Python tiktoken for the OpenAI encodings, Hugging Face tokenizers for
    /// a tokenizer.json). The end-of-document token is added as each consumer expects:
    /// appended for Megatron and nanoGPT, prepended for llm.c.
    ///
    /// Output: PREFIX_000000.bin (+ .idx for Megatron), ... of --shard-tokens tokens each,
    /// plus manifest.json and SHA256SUMS. The bytes do not depend on --jobs; a killed run
    /// resumes when re-run with the same arguments and ends byte-identical.
    ///
    /// Example: shardsmith tokenize ./c4 ./tokens --tokenizer cl100k_base --format megatron
    Tokenize(TokenizeArgs),

    /// Write a SHA-256 manifest (manifest.json + SHA256SUMS) of an existing directory
    ///
    /// Every file is read once, in parallel, and hashed with its chunk checksums; tar
    /// shards are also walked and their sample counts recorded. Use it on shards made by
    /// another tool or on a checkpoint folder at save time, then `shardsmith verify`.
    ///
    /// Example: shardsmith manifest ./checkpoints/step_4000
    Manifest(ManifestArgs),

    /// Check a dataset or checkpoint (a directory or one file) for damage; exit 1 if anything is wrong
    ///
    /// With a manifest: every listed file present, same size and SHA-256 (a mismatch is
    /// located to its first differing 1 MiB chunk), no unlisted files, the root digest
    /// consistent. With or without one: every tar shard walked under the readers' rules
    /// (header checksums, complete members, end marker, no trailing data, contiguous
    /// samples, names readers key correctly), and every checkpoint recognised by content
    /// (safetensors, torch zip with every CRC-32, pickles read without executing them,
    /// DCP, DeepSpeed and Megatron layouts, zero runs and holes in tensor data). Each
    /// finding names the file and offset.
    ///
    /// Example: shardsmith verify ./shards --expect-root 3f2a...
    Verify(VerifyArgs),

    /// Combine parts packed separately (pack --rank/--world-size) into one dataset
    ///
    /// Each part is a directory directly inside OUTPUT with its own manifest. For MDS a
    /// root index.json lists every part's shards (basenames prefixed with the part's
    /// directory, as streaming's merge_index does); for every format a root manifest lists
    /// every part's files, taken from the parts' manifests without re-reading them.
    /// Without PART arguments, every sub-directory holding a manifest.json is a part, in
    /// numeric order.
    ///
    /// Example: shardsmith merge ./mds
    Merge(MergeArgs),

    /// Survey a training run's checkpoints; name the newest intact one to resume from
    ///
    /// Every checkpoint in RUN_DIR (`global_stepN/`, `iter_NNNNNNN/`, `checkpoint-N/`,
    /// DCP directories, `*.pt`, `*.safetensors`, ...) is verified as `verify` would,
    /// ordered by the step number in its name. Pointer files (DeepSpeed `latest`,
    /// Megatron `latest_checkpointed_iteration.txt`, a `latest` symlink) must name an
    /// intact checkpoint. Exit 0 when the newest checkpoint is intact, 1 when it is not
    /// (or a pointer is wrong), 2 when the audit could not run.
    ///
    /// Example: shardsmith audit ./checkpoints --json | jq -r .newest_intact
    Audit(AuditArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Directory holding the parts; the merged index and manifest are written here
    pub output: PathBuf,

    /// Part directories (each directly inside OUTPUT) in merge order
    pub parts: Vec<PathBuf>,
}

/// Shard formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// WebDataset tar shards (PREFIX-NNNNNN.tar), read by webdataset and wids
    #[value(alias = "wds")]
    Webdataset,
    /// MosaicML Streaming shards (shard.NNNNN.mds[.EXT] + index.json), read by StreamingDataset
    Mds,
    /// Parquet files (PREFIX-NNNNNN.parquet): a key column and one column per field
    Parquet,
}

/// What INPUT holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum InputFormatArg {
    /// Parquet when INPUT is a .parquet file or a directory of only .parquet files, else raw files
    Auto,
    /// A tree of raw files, grouped into samples by name
    Files,
    /// Parquet files: every row is a sample, every column a field
    Parquet,
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
    #[arg(long, value_enum, default_value = "webdataset")]
    pub format: FormatArg,

    /// What INPUT holds: raw files, or Parquet files whose rows are the samples
    ///
    /// Parquet rows keep their order; the key is the --key-column value, else
    /// STEM/ROW; every other column is a field (nulls are absent fields). Example:
    /// `shardsmith pack ./c4-parquet ./c4-mds --format mds --input-format parquet`.
    #[arg(long, value_enum, default_value = "auto", value_name = "KIND")]
    pub input_format: InputFormatArg,

    /// Pack only the files listed in LIST (one path relative to INPUT per line; `-` for stdin)
    ///
    /// Example: `(cd raw && find train -type f) > train.txt` then
    /// `shardsmith pack raw shards --files-from train.txt`.
    #[arg(long, value_name = "LIST")]
    pub files_from: Option<PathBuf>,

    /// Largest shard file, headers and padding included [default: 256MiB; mds: 64MiB]
    ///
    /// The real file size stays within the limit (for MDS: the uncompressed shard, as
    /// MDSWriter's size_limit); a single sample larger than the limit gets a shard of its
    /// own, with a warning. Units: k/M/G ×1000, Ki/Mi/Gi ×1024. Example: `--shard-size 1GiB`.
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

    /// Compression: mds none|zstd[:L]|gz[:L]|bz2[:L]|br[:L]|snappy [none]; parquet zstd[:L]|snappy|none [zstd]
    ///
    /// MDS names are MDSWriter's; the level never appears in file names. Example:
    /// `--compression zstd:7`.
    #[arg(long, value_name = "CODEC")]
    pub compression: Option<String>,

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

    /// Pack only part RANK (0-based) of --world-size equal parts, into OUTPUT/RANK
    ///
    /// Every rank lists the same input in the same order and takes a contiguous slice, so
    /// the parts never overlap; `shardsmith merge OUTPUT` then combines them. Example (a
    /// Slurm array): `--rank $SLURM_ARRAY_TASK_ID --world-size $SLURM_ARRAY_TASK_COUNT`.
    #[arg(long, value_name = "RANK", requires = "world_size")]
    pub rank: Option<u32>,

    /// Number of parts, with --rank
    #[arg(long, value_name = "N", requires = "rank")]
    pub world_size: Option<u32>,

    /// Shuffle the sample order before sharding (deterministic: see --seed)
    ///
    /// Readers can only shuffle shards and small buffers; a global shuffle at pack time
    /// mixes classes across shards.
    #[arg(long)]
    pub shuffle: bool,

    /// Seed of --shuffle; the same seed always gives the same order [default: 0]
    #[arg(long, value_name = "N", requires = "shuffle", value_parser = parse_count)]
    pub seed: Option<u64>,

    /// How to check file contents before packing
    ///
    /// A file that fails is left out with its whole sample and listed (an error with
    /// --strict). Example: `--validate full` decodes every JPEG and PNG.
    #[arg(long, value_enum, default_value = "cheap", value_name = "LEVEL")]
    pub validate: ValidateArg,

    /// Fail instead of leaving out any input (bad names, unreadable files, bad content)
    #[arg(long)]
    pub strict: bool,

    /// Replace a different dataset already in OUTPUT (only shardsmith's own files are removed)
    #[arg(long)]
    pub force: bool,
}

/// Token file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TokenFormatArg {
    /// Megatron-LM / NeMo indexed dataset: PREFIX_NNNNNN.bin + .idx, one sequence per document
    Megatron,
    /// nanoGPT: raw little-endian uint16 tokens (uint32 when the vocabulary needs it)
    Nanogpt,
    /// llm.c / modded-nanogpt: 1024-byte header, then tokens
    Llmc,
}

/// A token count per shard, or `none` for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardTokens(pub Option<u64>);

fn parse_shard_tokens(text: &str) -> Result<ShardTokens, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(ShardTokens(None));
    }
    let clean: String = text.trim().chars().filter(|&c| c != '_').collect();
    let (digits, multiplier) = match clean.char_indices().last() {
        Some((i, 'k' | 'K')) => (&clean[..i], 1_000),
        Some((i, 'M')) => (&clean[..i], 1_000_000),
        Some((i, 'G')) => (&clean[..i], 1_000_000_000),
        _ => (clean.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .filter(|&n| n > 0)
        .map(|n| ShardTokens(Some(n)))
        .ok_or_else(|| {
            format!("`{text}` is not a token count; examples: 100M, 50_000_000, 10k, none")
        })
}

#[derive(Debug, Args)]
pub struct TokenizeArgs {
    /// Input files or directories (JSONL, .jsonl.gz, .jsonl.zst, Parquet, .txt), then the
    /// output directory (token files, manifest.json, SHA256SUMS; created if needed)
    #[arg(required = true, num_args = 1.., action = clap::ArgAction::Append, value_name = "INPUT... OUTPUT")]
    pub paths: Vec<PathBuf>,

    /// gpt2 (= r50k_base), p50k_base, cl100k_base, o200k_base, or a tokenizer.json path
    ///
    /// The OpenAI encodings work offline (their rank files are built in). A Hugging Face
    /// tokenizer.json is loaded as is, with padding and truncation off. Example:
    /// `--tokenizer cl100k_base` or `--tokenizer ./llama3/tokenizer.json`.
    #[arg(long, short = 't', value_name = "T")]
    pub tokenizer: String,

    /// Token file format
    #[arg(long, value_enum, default_value = "megatron")]
    pub format: TokenFormatArg,

    /// JSON key or Parquet column holding the text
    #[arg(long, default_value = "text", value_name = "NAME")]
    pub field: String,

    /// Tokens per output file (k/M/G ×1000, underscores allowed), or `none` for one file
    ///
    /// nanoGPT and llm.c files hold exactly N tokens (the last fewer) and a document may
    /// continue in the next file, as llm.c writes them; a Megatron file ends before the
    /// document that would overflow it. Resuming restarts at the last finished file.
    /// Example: `--shard-tokens 100M`.
    #[arg(long, value_name = "N", default_value = "100M", value_parser = parse_shard_tokens, conflicts_with = "shard_size")]
    pub shard_tokens: ShardTokens,

    /// Bytes of tokens per output file instead of --shard-tokens (64MiB, 1GB, ...)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub shard_size: Option<u64>,

    /// File name prefix: PREFIX_000000.bin, PREFIX_000001.bin, ...
    #[arg(long, default_value = "tokens")]
    pub prefix: String,

    /// Add the end-of-document token to every document (the default)
    #[arg(long, overrides_with = "no_eod")]
    pub eod: bool,

    /// Add no end-of-document token
    #[arg(long)]
    pub no_eod: bool,

    /// The end-of-document token [default: <|endoftext|>, or </s>, <|end_of_text|>, ...]
    #[arg(long, value_name = "TOKEN")]
    pub eod_token: Option<String>,

    /// Encode special-token text in documents (`<|endoftext|>`) as the special token
    ///
    /// By default it is encoded as ordinary text, like tiktoken's encode_ordinary, so a
    /// document cannot forge a document boundary.
    #[arg(long)]
    pub allow_special: bool,

    /// Fail on the first malformed record instead of counting it and leaving it out
    #[arg(long)]
    pub strict: bool,

    /// Replace a different dataset already in OUTPUT (only shardsmith's own files are removed)
    #[arg(long)]
    pub force: bool,
}

impl TokenizeArgs {
    /// Every path but the last (call after checking there are two at least).
    pub fn inputs(&self) -> &[PathBuf] {
        &self.paths[..self.paths.len() - 1]
    }

    /// The last path.
    pub fn output(&self) -> &PathBuf {
        self.paths.last().expect("clap requires a path")
    }
}

#[derive(Debug, Args)]
pub struct ManifestArgs {
    /// Directory to describe
    pub dir: PathBuf,

    /// Write the manifest to FILE instead of DIR/manifest.json (no SHA256SUMS is written then)
    ///
    /// Useful for read-only datasets; verify with `shardsmith verify DIR --manifest FILE`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace an existing manifest
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Dataset directory, or a single shard file
    pub path: PathBuf,

    /// Manifest to check against instead of PATH/manifest.json
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,

    /// The manifest's root digest must be HEX (64 hex digits): catches a replaced manifest
    ///
    /// Record the root printed by `pack` or `manifest` (or `jq -r .root_sha256
    /// manifest.json`) somewhere the data cannot change it, e.g. the training config.
    #[arg(long, value_name = "HEX", value_parser = parse_root)]
    pub expect_root: Option<String>,

    /// Also count NaN and Inf in every float tensor of a checkpoint (bf16 and fp8 included)
    ///
    /// NaN is an error (training resumed from it produces NaN loss), ±Inf a warning
    /// (masks hold it legitimately). The scan runs in the same single read. Example:
    /// `shardsmith verify ckpt/step_4000 --scan-values`.
    #[arg(long)]
    pub scan_values: bool,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Directory holding a training run's checkpoints (one per subdirectory or file)
    pub run_dir: PathBuf,

    /// Also count NaN and Inf in every float tensor (see `verify --scan-values`)
    #[arg(long)]
    pub scan_values: bool,
}

fn parse_root(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("a root digest is 64 hex digits (the manifest's root_sha256)".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn tokenize_takes_many_inputs_then_the_output() {
        let cli = Cli::try_parse_from([
            "shardsmith",
            "tokenize",
            "a.jsonl",
            "dir",
            "-t",
            "gpt2",
            "--no-eod",
            "out",
        ])
        .unwrap();
        let Command::Tokenize(args) = cli.command else {
            panic!("tokenize")
        };
        assert_eq!(
            args.inputs(),
            [PathBuf::from("a.jsonl"), PathBuf::from("dir")]
        );
        assert_eq!(args.output(), &PathBuf::from("out"));
        assert!(args.no_eod);
        assert_eq!(args.shard_tokens, ShardTokens(Some(100_000_000)));
        assert_eq!(
            parse_shard_tokens("1_000k"),
            Ok(ShardTokens(Some(1_000_000)))
        );
        assert_eq!(parse_shard_tokens("none"), Ok(ShardTokens(None)));
        assert!(parse_shard_tokens("0").is_err());
        assert!(parse_shard_tokens("1.5M").is_err());
        assert!(Cli::try_parse_from(["shardsmith", "tokenize", "-t", "gpt2"]).is_err());
    }

    #[test]
    fn seed_needs_shuffle() {
        assert!(Cli::try_parse_from(["shardsmith", "pack", "a", "b", "--seed", "3"]).is_err());
        assert!(
            Cli::try_parse_from(["shardsmith", "pack", "a", "b", "--shuffle", "--seed", "3"])
                .is_ok()
        );
    }
}
