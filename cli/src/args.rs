//! Command-line definitions. The first line of each doc comment is the `-h` text; the
//! rest appears with `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod diff;
mod images;
mod look;
mod manifest;
mod pack;
mod shell;
mod sign;
mod task;
mod tokenize;
mod verify;

pub use diff::DiffArgs;
pub use images::{ImageArgs, ImageAsArg, ImageFormatArg, ResizeModeArg};
pub use look::{CatArgs, DatasetArgs, LookCommand, LsArgs, StatsArgs};
pub use manifest::ManifestArgs;
pub use pack::{InputFormatArg, KeyPrefixArg, PackArgs, ValidateArg};
pub use shell::{CompletionsArgs, ManArgs};
pub use sign::SignArgs;
pub use tokenize::{TokenFormatArg, TokenizeArgs};
pub use verify::{BadRange, RangeArg, VerifyArgs, parse_range, parse_root};

/// The command-line definitions, with the long `--version` text.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().long_version(crate::version::long())
}

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
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// Worker threads [default: all cores]
    ///
    /// Output is byte-identical whatever the value. Example: `-j 4`.
    #[arg(short, long, global = true, value_name = "N")]
    pub jobs: Option<usize>,

    /// No progress bar and no summary; errors and warnings still go to stderr
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// More detail on stderr: every input pack or tokenize left out, every audit finding
    #[arg(short, long, global = true)]
    pub verbose: bool,

    /// Print one machine-readable JSON report on stdout instead of the summary
    ///
    /// Keys are stable snake_case, sizes in bytes, durations in seconds. When a command
    /// cannot run (exit 2) the report is `{"error": {"kind", "message", "path", "hint"}}`.
    /// Example: `shardsmith verify shards --json | jq .findings`.
    #[arg(long, global = true)]
    pub json: bool,

    /// Never draw a progress bar (bars are drawn only when stderr is a terminal)
    #[arg(long, global = true)]
    pub no_progress: bool,

    /// Object store requests in flight at once, per location [default: 64]
    ///
    /// Reading many small objects is bound by latency, not bandwidth: S3 answers a GET
    /// in tens of milliseconds, so throughput comes from many requests at once.
    /// Example: `--io-concurrency 128`.
    #[arg(long, global = true, value_name = "N")]
    pub io_concurrency: Option<usize>,

    /// Retries of a failed object store request before the run fails [default: 10]
    ///
    /// Throttling (429, 503 SlowDown), server errors, timeouts and connection resets are
    /// retried with exponential backoff and jitter: each wait is at least half a second
    /// and at most 15 s. Every retry is said on stderr. A server that refuses every
    /// connection is given up on after 5 s; `--storage-timeout` bounds the whole wait.
    /// Example: `--retries 20`.
    #[arg(long, global = true, value_name = "N")]
    pub retries: Option<usize>,

    /// Seconds a store may fail every request before the run gives up [default: 60]
    ///
    /// Counted from the first failure with no success since: a server that accepts
    /// connections and never answers, or answers only errors, costs at most this long.
    /// Each attempt also waits at most 30 s for an answer. Example: `--storage-timeout 300`.
    #[arg(long, global = true, value_name = "SECS")]
    pub storage_timeout: Option<f64>,

    /// One object store setting, overriding the environment (repeatable)
    ///
    /// Keys are object_store's: `aws_endpoint`, `aws_region`, `aws_allow_http`,
    /// `aws_skip_signature`, `google_service_account`, `azure_storage_account_name`,
    /// `azure_storage_use_emulator`, …. Values never appear in output or errors.
    /// Example: `--storage-option aws_endpoint=http://127.0.0.1:9000`.
    #[arg(long, global = true, value_name = "KEY=VALUE")]
    pub storage_option: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Pack raw files into shards, or convert WebDataset, MDS and Parquet, with a manifest
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

    /// Finish a pack split into tasks, or combine datasets packed separately into one
    ///
    /// After `pack --task-index`: once every task has finished, `merge OUTPUT` checks
    /// that each task's share is there and was made with the same input and options,
    /// names the tasks still missing (exit 2), and writes the manifest (and MDS
    /// index.json): the bytes a single `pack` run writes.
    ///
    /// Otherwise each part is a directory directly inside OUTPUT with its own manifest. For MDS a
    /// root index.json lists every part's shards (basenames prefixed with the part's
    /// directory, as streaming's merge_index does); for WebDataset parts that all hold
    /// wids' or Energon's index, a root wids-index.json or .nv-meta/ over every part's
    /// shards; for every format a root manifest lists every part's files, taken from the
    /// parts' manifests without re-reading them.
    /// Without PART arguments, every sub-directory holding a manifest.json is a part, in
    /// numeric order.
    ///
    /// Examples: shardsmith merge s3://shards/wds (after the tasks); shardsmith merge ./mds 0 1
    Merge(MergeArgs),

    /// Sign a dataset or checkpoint directory (OpenSSF Model Signing bundle, key pair)
    ///
    /// Writes a Sigstore bundle that signs the SHA-256 of every file of PATH (hidden files
    /// included; the top-level .git, .gitattributes, .github and .gitignore, and the
    /// signature itself when it lies inside, left out), as the `model_signing` package's
    /// `sign key` method does: `model_signing verify key` accepts it, and `shardsmith
    /// verify --signature` accepts bundles model_signing wrote. Each file is read once:
    /// the same read verifies it (manifest, structure, as `verify`), and nothing is
    /// signed if that finds a problem (exit 1) unless --no-checks. With --shard-size, the
    /// SHA-256 of every shard of every file instead (model_signing's shard serialization),
    /// hashed on all cores.
    ///
    /// Keys: ECDSA on P-256, P-384 or P-521 in PEM, e.g. `openssl ecparam -name
    /// prime256v1 -genkey -noout -out key.pem && openssl ec -in key.pem -pubout -out
    /// key.pub`.
    ///
    /// Example: shardsmith sign ./checkpoints/step_4000 --private-key key.pem --signature step_4000.sig
    Sign(SignArgs),

    /// Survey a training run's checkpoints; name the newest intact one to resume from
    ///
    /// Every checkpoint in RUN_DIR (`global_stepN/`, `iter_NNNNNNN/`, `checkpoint-N/`,
    /// DCP directories, `*.pt`, `*.safetensors`, ...) is verified as `verify` would,
    /// ordered by the step number in its name. Pointer files (DeepSpeed `latest`,
    /// Megatron `latest_checkpointed_iteration.txt`, a `latest` symlink) must name an
    /// intact checkpoint. Exit 0 when the newest checkpoint is intact, 1 when it is not
    /// (or a pointer is wrong), 2 when the audit could not run.
    ///
    /// RUN_DIR may be an object store prefix: a checkpoint with a manifest.json is
    /// verified in place against it; one without is copied to --scratch, one checkpoint
    /// at a time, and verified there with every format check.
    ///
    /// Example: shardsmith audit ./checkpoints --json | jq -r .newest_intact
    Audit(AuditArgs),

    /// Copy a dataset or checkpoint between locations, verifying every file as it arrives
    ///
    /// Typically a bucket to local NVMe before training (also local to a bucket to
    /// publish, bucket to bucket). Each file is hashed while it is copied and compared
    /// with SRC's manifest.json: no second read. A file appears under its name only when
    /// its SHA-256 matches; a mismatch is reported with the first differing byte range
    /// (from the manifest's chunk CRCs), the bad copy is not kept, and stage exits with
    /// status 1. The manifest is written last, only when every file matched. A re-run
    /// keeps the files already staged (same size and digest). SRC without a manifest is
    /// copied whole and DST gets a manifest of what was copied.
    ///
    /// Example: shardsmith stage s3://shards/wds /nvme/wds
    Stage(StageArgs),

    /// List the input files `pack` would read, with their sizes, for `pack --files-from`
    ///
    /// One `PATH<TAB>SIZE` line per file, sorted by path, relative to INPUT (a directory
    /// or an object store prefix), leaving out what `pack` leaves out (with the reason on
    /// stderr). Made once and given to every task of a split run, it spares each task
    /// its own walk of the input (a `stat` per file, or a listing of the bucket).
    ///
    /// Example: shardsmith list s3://raw/images -o files.tsv
    List(ListArgs),

    /// Write readers' indexes for WebDataset shards that exist already (wids, DALI, Energon)
    ///
    /// Reads every .tar shard of DATASET (a local directory or an object store prefix,
    /// subdirectories included) once, in parallel, checking its tar structure as `verify` does and listing where
    /// each sample and member lies, then writes the indexes asked for (temporary name,
    /// then rename): wids-index.json for `wids.ShardListDataset`, as `widsindex create`
    /// writes it (without md5sum); dali/NAME.idx per shard for DALI's
    /// `fn.readers.webdataset(index_paths=...)`, as `wds2idx` writes it; `.nv-meta/` and
    /// NAME.tar.idx per shard, as `energon prepare --split-ratio 1,0,0 --sample-type
    /// CrudeWebdataset` writes them, so Energon loads the dataset without `energon
    /// prepare`. When DATASET has a manifest, the indexes are listed in it. A damaged or
    /// truncated shard is named with the byte offset and nothing is written (exit 1).
    /// `pack --index` writes the same files while packing.
    ///
    /// Example: shardsmith index ./wds --for dali,energon
    Index(IndexArgs),

    /// Compare two checkpoints tensor by tensor, whatever their containers; exit 1 if they differ
    ///
    /// A `.pt` and its safetensors conversion, a DCP checkpoint saved by 8 ranks and the
    /// same state in one file, a model re-sharded into other files: the tensors are read
    /// from their bytes (pickles parsed, never executed) in canonical form (row-major,
    /// contiguous, little-endian; a transposed view reads as its contiguous copy) and
    /// compared pair by pair, streamed, never loaded whole. Reports the tensors only in
    /// A, only in B, with another dtype or shape, and with other data. Exit 0 when both
    /// hold the same weights, 1 when they differ, 2 when they cannot be read.
    ///
    /// Example: shardsmith diff model.pt model.safetensors
    Diff(DiffArgs),

    #[command(flatten)]
    Look(LookCommand),

    /// Print a shell completion script (bash, zsh, fish, powershell, elvish)
    ///
    /// Generated from the same definitions as the parser: every subcommand and flag.
    /// Load it for this shell, or install it where the shell looks.
    ///
    /// Examples: source <(shardsmith completions bash);
    /// shardsmith completions zsh > "${fpath[1]}/_shardsmith";
    /// shardsmith completions fish > ~/.config/fish/completions/shardsmith.fish
    Completions(CompletionsArgs),

    /// Print a man page (roff): of shardsmith, or of one command as shardsmith-COMMAND(1)
    ///
    /// Generated from the same definitions as `--help`. Read it with `man -l`, or install
    /// it under a `man1` directory of MANPATH.
    ///
    /// Examples: shardsmith man verify | man -l -; shardsmith man > /usr/local/share/man/man1/shardsmith.1
    Man(ManArgs),
}

impl Command {
    /// Every subcommand's name, as typed.
    pub const NAMES: [&str; 16] = [
        "pack",
        "tokenize",
        "manifest",
        "verify",
        "merge",
        "sign",
        "audit",
        "stage",
        "list",
        "index",
        "diff",
        "ls",
        "cat",
        "stats",
        "completions",
        "man",
    ];

    /// This subcommand's name, as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Pack(_) => "pack",
            Command::Tokenize(_) => "tokenize",
            Command::Manifest(_) => "manifest",
            Command::Verify(_) => "verify",
            Command::Merge(_) => "merge",
            Command::Audit(_) => "audit",
            Command::Sign(_) => "sign",
            Command::Stage(_) => "stage",
            Command::List(_) => "list",
            Command::Index(_) => "index",
            Command::Diff(_) => "diff",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
            Command::Look(look) => look.name(),
        }
    }
}

#[derive(Debug, Args)]
pub struct StageArgs {
    /// Where the dataset is: a directory, s3://, gs://, az:// or file:// prefix
    pub src: PathBuf,

    /// Where it goes (created if needed): a directory or an object store prefix
    pub dst: PathBuf,

    /// Keep a file already at DST when its size matches, without hashing it again
    ///
    /// Faster on a re-run over many large files; a same-size corruption of an earlier
    /// copy then goes unnoticed. Example: `--trust-existing`.
    #[arg(long)]
    pub trust_existing: bool,

    /// Copy a source that holds an unfinished pack or tokenize run, as it is
    ///
    /// Without it, a source with a run's state and no manifest is refused: a copy of
    /// part of a dataset, with a manifest of its own, would pass for the whole. Finish
    /// the run instead (re-run the same command). Example: `--accept-unfinished`.
    #[arg(long)]
    pub accept_unfinished: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The input: a directory, s3://, gs://, az:// or file:// prefix
    pub input: PathBuf,

    /// Write the list to LIST, a file or an object URL, instead of stdout
    ///
    /// Written whole under a temporary name then renamed (one PUT in a bucket), so a
    /// task never reads half a list. Example: `-o s3://shards/wds-files.tsv`, then
    /// `shardsmith pack s3://raw/images s3://shards/wds --files-from
    /// s3://shards/wds-files.tsv --task-index auto`.
    #[arg(short = 'o', long = "output", value_name = "LIST")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The WebDataset directory (or object store prefix: s3://, gs://, az://) whose .tar shards are indexed
    pub dataset: PathBuf,

    /// Which readers' indexes to write, comma-separated: wids, dali, energon, or all
    ///
    /// `wids`: wids-index.json for `wids.ShardListDataset`. `dali`: dali/NAME.idx per
    /// shard for DALI's webdataset reader. `energon`: `.nv-meta/` (index.sqlite,
    /// .info.json, split.yaml with every shard in train, dataset.yaml as CrudeWebdataset)
    /// and NAME.tar.idx per shard; Energon needs sample keys unique across the dataset,
    /// so a key in two shards stops it (exit 2). `all`: all three.
    /// Example: `--for all`.
    #[arg(long = "for", value_name = "LIST")]
    pub readers: String,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Directory holding the parts; the merged index and manifest are written here
    pub output: PathBuf,

    /// Part directories in merge order, named as they are inside OUTPUT (`0 1`, not `out/0`)
    ///
    /// A path that leads into OUTPUT (`out/0`) is accepted too. Without PART, every
    /// sub-directory of OUTPUT holding a manifest.json, in numeric order.
    pub parts: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Directory holding a training run's checkpoints (one per subdirectory or file), or
    /// an object store prefix (s3://bucket/run)
    pub run_dir: PathBuf,

    /// Local directory where checkpoints of a run in an object store that have no
    /// manifest are copied, one at a time, to be verified [default: the system's
    /// temporary directory]
    ///
    /// It needs room for the largest such checkpoint; each copy is deleted once checked.
    /// Example: `--scratch /nvme/tmp`.
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,

    /// Also count NaN and Inf in every float tensor (see `verify --scan-values`)
    #[arg(long)]
    pub scan_values: bool,
}

#[cfg(test)]
mod tests {
    use super::tokenize::{ShardTokens, parse_shard_tokens};
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
