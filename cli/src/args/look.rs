//! `ls`, `cat` and `stats`: looking inside a dataset without unpacking it.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The three commands that look inside a dataset, flattened into the top-level list.
#[derive(Debug, Subcommand)]
pub enum LookCommand {
    /// List a dataset: one line per shard, per sample (-l), per token file or per tensor
    ///
    /// WebDataset tars, MDS datasets and Parquet files: one line per shard with its size
    /// in bytes, samples, first and last key and fields; with -l one line per sample with
    /// each field's size. Token files (Megatron .bin/.idx, nanoGPT, llm.c): one line per
    /// file with its documents, tokens and dtype. Checkpoints (safetensors, torch zip,
    /// legacy torch, DCP from its .metadata): one line per tensor with its dtype, shape
    /// and bytes. The kind is told from the manifest, else from the files' names and
    /// content.
    ///
    /// Example: shardsmith ls ./shards -l
    Ls(LsArgs),

    /// Write one field of one sample to stdout (raw bytes), or the whole sample as a tar
    ///
    /// The shard is found through manifest.json's first and last key of each shard, so
    /// only that shard is read; without a manifest, or when the key is not where the
    /// ranges say (a shuffled dataset), shards are read one by one until the key is
    /// found. -v says on stderr which shards were opened and how many bytes were read.
    /// Without FIELD the sample is written as a tar stream of members KEY.FIELD, as a
    /// WebDataset shard holds it.
    ///
    /// Example: shardsmith cat ./shards cat/0001 json | jq .label
    Cat(CatArgs),

    /// Count samples, fields and field sizes (min, median, p99, max) and find duplicate keys
    ///
    /// Every sample's field sizes are read from the shards' headers (WebDataset), index
    /// and shard headers (MDS) or column values (Parquet). Percentiles are exact (nearest
    /// rank) over one 8-byte size per field per sample, so tens of millions of samples
    /// fit in memory.
    ///
    /// Example: shardsmith stats ./shards --json | jq .fields
    Stats(StatsArgs),
}

impl LookCommand {
    pub fn name(&self) -> &'static str {
        match self {
            LookCommand::Ls(_) => "ls",
            LookCommand::Cat(_) => "cat",
            LookCommand::Stats(_) => "stats",
        }
    }
}

/// Where the dataset is and how its keys are read; shared by the three commands.
#[derive(Clone, Debug, Args)]
pub struct DatasetArgs {
    /// Dataset directory (WebDataset, MDS, Parquet, token files, checkpoint), or one file of it
    pub dataset: PathBuf,

    /// Column holding each sample's key (MDS, Parquet)
    ///
    /// Parquet files without that column key their rows PATH/ROW (the file's path
    /// without .parquet), as `pack` does.
    /// Example: `--key-column id`.
    #[arg(long, default_value = "key", value_name = "NAME")]
    pub key_column: String,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub data: DatasetArgs,

    /// One line per sample (key, then each field with its size) instead of per shard
    ///
    /// Fields are listed in name order as FIELD=BYTES. Example: `shardsmith ls shards -l |
    /// grep -v json=` finds the samples without a JSON field.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    #[command(flatten)]
    pub data: DatasetArgs,

    /// Key of the sample (as `ls -l` shows it)
    pub key: String,

    /// Field to write; without it the whole sample is written as a tar stream
    ///
    /// The field's bytes exactly as stored (an MDS or Parquet column's encoded bytes).
    /// Example: `shardsmith cat shards cat/0001 jpg > cat.jpg`; `shardsmith cat shards
    /// cat/0001 | tar tv` lists the sample's fields.
    pub field: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub data: DatasetArgs,

    /// Also read every field's bytes and count the samples whose fields equal an
    /// earlier sample's: what `pack --dedup` would leave out
    ///
    /// Without it `stats` reads only the listing (headers, indexes, footers). Samples
    /// are compared by a 128-bit digest of their field names and bytes (the key apart),
    /// read on every core. Example: `shardsmith stats shards/ --dedup`.
    #[arg(long)]
    pub dedup: bool,
}
