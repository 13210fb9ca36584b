//! `tokenize`'s arguments resolved and checked before any output is touched: the
//! format and its options, the split run's task, the inputs listed, the tokenizer loaded.

use std::sync::Arc;

use anyhow::{Context, Result};
use shardsmith_store::{Location, ObjectTree};
use shardsmith_tokens::{
    InputRoot, TextInput, TokenFormat, TokenizeSettings, Tokenizer, TokenizerSpec,
};

use crate::args::{TokenFormatArg, TokenizeArgs};
use crate::output::refuse;
use crate::storage;

/// `tokenize` arguments resolved and checked before any output is touched.
pub(super) struct Resolved {
    pub(super) inputs: Vec<TextInput>,
    pub(super) output: Location,
    pub(super) tokenizer: Tokenizer,
    pub(super) settings: TokenizeSettings,
    pub(super) task: Option<shardsmith_store::tasks::TaskId>,
}

/// Resolves and checks every argument, in the order a user fixes them: the flags, the
/// task, the output, each input, then the tokenizer and the shard size it implies.
pub(super) fn resolve(args: &TokenizeArgs) -> Result<Resolved> {
    if args.paths.len() < 2 {
        refuse!(
            Usage,
            "give the input (files or directories) and then the output directory"
        );
    }
    let mut settings = tokenize_settings(args)?;
    let task = task(args)?;
    let output = storage::location(args.output())?;
    if let Location::Local(path) = &output {
        std::path::absolute(path)
            .with_context(|| format!("output `{}` is not a valid path", path.display()))?;
    }
    let roots = args
        .inputs()
        .iter()
        .map(|input| input_root(args, input, &output))
        .collect::<Result<Vec<_>>>()?;
    let inputs = shardsmith_tokens::input::list(&roots)?;
    let tokenizer = Tokenizer::load(&TokenizerSpec::parse(&args.tokenizer), args.allow_special)?;
    if let Some(size) = args.shard_size {
        settings.shard_tokens = Some(shard_tokens(size, settings.format, &tokenizer)?);
        settings.check()?;
    }
    Ok(Resolved {
        task,
        inputs,
        output,
        tokenizer,
        settings,
    })
}

/// The run's settings, from the flags alone.
fn tokenize_settings(args: &TokenizeArgs) -> Result<TokenizeSettings> {
    let format = match args.format {
        TokenFormatArg::Megatron => TokenFormat::Megatron,
        TokenFormatArg::Nanogpt => TokenFormat::Nanogpt,
        TokenFormatArg::Llmc => TokenFormat::Llmc,
    };
    let eod = !args.no_eod;
    if !eod && args.eod_token.is_some() {
        refuse!(
            Usage,
            "--eod-token names the end-of-document token, but --no-eod adds none"
        );
    }
    let settings = TokenizeSettings {
        format,
        field: args.field.clone(),
        shard_tokens: args.shard_tokens.0,
        prefix: args.prefix.clone(),
        eod,
        eod_token: args.eod_token.clone(),
        allow_special: args.allow_special,
        strict: args.strict,
        force: args.force,
        threads: rayon::current_num_threads(),
        dedup: args.dedup,
    };
    settings.check()?;
    Ok(settings)
}

/// This task of a split run, if one.
fn task(args: &TokenizeArgs) -> Result<Option<shardsmith_store::tasks::TaskId>> {
    let task = crate::task::resolve(
        args.task.task_index.as_deref(),
        args.task.task_count,
        &|name| std::env::var(name).ok(),
    )?;
    if let Some(task) = &task {
        if task.count == 0 || task.index >= task.count {
            refuse!(
                Task,
                "task index {} ({}) must be below the task count {}",
                task.index,
                task.source,
                task.count
            );
        }
        if args.force {
            refuse!(
                Usage,
                "--force cannot be combined with a task index: each task would remove what the others wrote; empty the output first"
            );
        }
    }
    Ok(task)
}

/// One input, local or remote, which must not overlap the output.
fn input_root(
    args: &TokenizeArgs,
    input: &std::path::Path,
    output: &Location,
) -> Result<InputRoot> {
    if let Location::Remote(remote) = storage::location(input)? {
        let shown = remote.url("");
        let out = output.display();
        if out == shown || out.starts_with(&format!("{shown}/")) {
            refuse!(
                OutputConflict,
                "output `{out}` is inside the input `{shown}`; choose an output outside the input"
            );
        }
        let (tree, file) = ObjectTree::for_remote(remote)?;
        return Ok(InputRoot {
            source: Arc::new(tree),
            display: shown,
            file,
        });
    }
    crate::output::need_path(input, "input")?;
    let full = input
        .canonicalize()
        .with_context(|| format!("input `{}` cannot be opened", input.display()))?;
    if let Location::Local(output) = output {
        let output = std::path::absolute(output)?;
        let out = output.canonicalize().unwrap_or_else(|_| output.clone());
        if full.is_dir() && (out.starts_with(&full) || full.starts_with(&out)) {
            refuse!(
                OutputConflict,
                "output `{}` and input `{}` overlap; choose an output outside the input",
                args.output().display(),
                input.display()
            );
        }
    }
    Ok(InputRoot::local(input)?)
}

/// The tokens per shard that `--shard-size` bytes hold in `format` (after llm.c's
/// header), in the dtype the tokenizer's vocabulary needs.
fn shard_tokens(size: u64, format: TokenFormat, tokenizer: &Tokenizer) -> Result<u64> {
    let dtype = format.dtype(tokenizer.vocab_size())?;
    let header = if format == TokenFormat::Llmc { 1024 } else { 0 };
    let tokens = size.saturating_sub(header) / dtype.size();
    if tokens == 0 {
        refuse!(
            Setting,
            "--shard-size {size} holds no {} token",
            dtype.name()
        );
    }
    Ok(tokens)
}
