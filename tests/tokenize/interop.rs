//! Token ids equal to the Python reference tokenizers (tiktoken fed the same rank files
//! offline; Hugging Face tokenizers), and our files read by numpy, megatron-core's own
//! IndexedDataset and IndexedDatasetBuilder (byte identity), numpy.memmap and the llm.c
//! header rules. Needs `SHARDSMITH_PYTHON`, like `interop.rs`.

use std::path::{Path, PathBuf};

use crate::interop::{interop_dir, python, run_python};
use crate::tokenize::basic::{documents, jsonl, words};
use crate::util::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The four `.tiktoken` rank files, written into `dir` from the ranks `tiktoken-rs` embeds:
/// one `base64(token bytes) rank` line per rank in rank order, special tokens left out, as
/// OpenAI publishes them. `reference.py tiktoken-cache` checks each file's SHA-256 against
/// the published one, so a file that is not byte-identical fails the test there. Nothing
/// here asks cargo where the crate's sources are: a fresh machine has downloaded only the
/// crates of its own platform, and `cargo metadata --offline` cannot resolve the others.
fn rank_files(dir: &Path) -> Vec<PathBuf> {
    use base64::Engine as _;
    type Load = fn() -> anyhow::Result<tiktoken_rs::CoreBPE>;
    let encodings: [(&str, Load, u32); 4] = [
        ("cl100k_base", tiktoken_rs::cl100k_base, 100_277),
        ("o200k_base", tiktoken_rs::o200k_base, 200_019),
        ("p50k_base", tiktoken_rs::p50k_base, 50_281),
        ("r50k_base", tiktoken_rs::r50k_base, 50_257),
    ];
    std::fs::create_dir_all(dir).unwrap();
    encodings
        .into_iter()
        .map(|(name, load, n_vocab)| {
            let core = load().unwrap();
            let specials: std::collections::HashSet<u32> = core
                .special_tokens()
                .into_iter()
                .flat_map(|s| core.encode_with_special_tokens(s))
                .collect();
            let mut file = String::new();
            for id in (0..n_vocab).filter(|id| !specials.contains(id)) {
                let Ok(bytes) = core.decode_bytes(&[id]) else {
                    continue; // a gap in the ranks (cl100k_base has some)
                };
                let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
                file.push_str(&format!("{b64} {id}\n"));
            }
            let path = dir.join(format!("{name}.tiktoken"));
            std::fs::write(&path, file).unwrap();
            path
        })
        .collect()
}

/// Runs Python with the offline tiktoken cache; any download attempt fails.
fn py(cache: &Path, args: &[&str]) -> String {
    let proxy = std::ffi::OsStr::new("http://127.0.0.1:9");
    run_python(
        args,
        &[
            ("TIKTOKEN_CACHE_DIR", cache.as_os_str()),
            ("HTTP_PROXY", proxy),
            ("HTTPS_PROXY", proxy),
        ],
    )
    .expect("python was found in setup")
}

struct Env {
    cache: PathBuf,
    tree: Tree,
    corpus: String,
}

/// The edge-case documents, a document over 65,535 tokens, and real text from the
/// machine (source code and docs of the interpreter's standard library).
fn setup() -> Option<Env> {
    python()?;
    let tree = Tree::new();
    let cache = tree.join("tiktoken-cache");
    let mut args = vec![
        repo()
            .join("tests/bench/reference.py")
            .to_string_lossy()
            .into_owned(),
        "tiktoken-cache".into(),
        cache.to_string_lossy().into_owned(),
    ];
    args.extend(
        rank_files(&tree.join("ranks"))
            .iter()
            .map(|p| p.to_string_lossy().into_owned()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    py(&cache, &args);
    let real = tree.join("real.jsonl");
    py(
        &cache,
        &[
            repo()
                .join("tests/bench/make_text_corpus.py")
                .to_str()
                .unwrap(),
            real.to_str().unwrap(),
            "2",
        ],
    );
    let mut docs = documents();
    docs.push(words(99, 70_000));
    let mut corpus = jsonl(&docs);
    corpus.push_str(&std::fs::read_to_string(&real).unwrap());
    tree.file("corpus.jsonl", corpus);
    let corpus = tree.s("corpus.jsonl");
    Some(Env {
        cache,
        tree,
        corpus,
    })
}

fn checker() -> String {
    interop_dir()
        .join("check_tokens.py")
        .to_string_lossy()
        .into_owned()
}

fn tokenize(env: &Env, out: &str, extra: &[&str]) -> String {
    let dir = env.tree.s(out);
    let mut args = vec!["tokenize", env.corpus.as_str(), dir.as_str()];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = run(&["verify", &dir]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
    dir
}

fn passed(stdout: &str) {
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn ids_equal_python_tiktoken_in_every_format() {
    let Some(env) = setup() else { return };
    for (encoding, format, shard) in [
        ("r50k_base", "megatron", "300k"),
        ("r50k_base", "nanogpt", "none"),
        ("r50k_base", "llmc", "300k"),
        ("p50k_base", "nanogpt", "none"),
        ("cl100k_base", "megatron", "none"),
        ("cl100k_base", "llmc", "250k"),
        ("o200k_base", "nanogpt", "300k"),
        ("o200k_base", "megatron", "300k"),
    ] {
        let out = tokenize(
            &env,
            &format!("{encoding}-{format}"),
            &["-t", encoding, "--format", format, "--shard-tokens", shard],
        );
        let stdout = py(
            &env.cache,
            &[&checker(), "tiktoken", encoding, &env.corpus, format, &out],
        );
        passed(&stdout);
        // The pinned env installs megatron-core: its reader and builder must have run.
        assert!(!stdout.contains("not installed"), "{stdout}");
    }
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn ids_equal_python_tokenizers_for_tokenizer_json() {
    let Some(env) = setup() else { return };
    for (kind, eod) in [("train-bpe", "<|endoftext|>"), ("train-wordpiece", "[SEP]")] {
        let json = env.tree.s(&format!("{kind}.json"));
        py(&env.cache, &[&checker(), kind, &env.corpus, &json]);
        for format in ["megatron", "nanogpt"] {
            let out = tokenize(
                &env,
                &format!("{kind}-{format}"),
                &[
                    "-t",
                    &json,
                    "--format",
                    format,
                    "--eod-token",
                    eod,
                    "--shard-tokens",
                    "200k",
                ],
            );
            passed(&py(
                &env.cache,
                &[&checker(), "hf", &json, eod, &env.corpus, format, &out],
            ));
        }
    }
}

#[test]
#[ignore = "needs the python env: SHARDSMITH_PYTHON (tests/setup.sh)"]
fn parquet_from_pyarrow_gives_the_same_ids() {
    let Some(env) = setup() else { return };
    let parquet = env.tree.s("corpus.parquet");
    py(&env.cache, &[&checker(), "parquet", &env.corpus, &parquet]);
    let dir = env.tree.s("pq");
    let o = run(&[
        "tokenize", &parquet, &dir, "-t", "gpt2", "--format", "nanogpt", "--field", "body",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    passed(&py(
        &env.cache,
        &[
            &checker(),
            "tiktoken",
            "r50k_base",
            &env.corpus,
            "nanogpt",
            &dir,
        ],
    ));
    let o = run(&["tokenize", &parquet, &env.tree.s("pq2"), "-t", "gpt2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no column `text`"),
        "{}",
        text(&o.stderr)
    );
}
