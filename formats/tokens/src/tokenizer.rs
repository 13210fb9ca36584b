//! The tokenizers `tokenize` runs: the OpenAI encodings, with the rank files the
//! `tiktoken-rs` crate embeds (offline) and our own pre-tokenizer and BPE, and any
//! Hugging Face `tokenizer.json`, through the `tokenizers` crate.

use std::path::{Path, PathBuf};

use super::bpe::{Bpe, Cache, Rank};
use super::pretok::Pattern;
use crate::{Error, Result};

/// The OpenAI encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenAi {
    /// GPT-2 / r50k_base (the same ranks, pattern and `<|endoftext|>` 50256).
    R50k,
    /// p50k_base.
    P50k,
    /// cl100k_base.
    Cl100k,
    /// o200k_base.
    O200k,
}

impl OpenAi {
    /// Parses `gpt2`, `r50k_base`, `p50k_base`, `cl100k_base`, `o200k_base`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "gpt2" | "r50k_base" => OpenAi::R50k,
            "p50k_base" => OpenAi::P50k,
            "cl100k_base" => OpenAi::Cl100k,
            "o200k_base" => OpenAi::O200k,
            _ => return None,
        })
    }

    /// Canonical name (tiktoken's).
    pub fn name(self) -> &'static str {
        match self {
            OpenAi::R50k => "r50k_base",
            OpenAi::P50k => "p50k_base",
            OpenAi::Cl100k => "cl100k_base",
            OpenAi::O200k => "o200k_base",
        }
    }

    fn pattern(self) -> Pattern {
        match self {
            OpenAi::R50k | OpenAi::P50k => Pattern::R50k,
            OpenAi::Cl100k => Pattern::Cl100k,
            OpenAi::O200k => Pattern::O200k,
        }
    }

    /// Special tokens (text, id).
    fn specials(self) -> Vec<(String, Rank)> {
        let list: &[(&str, Rank)] = match self {
            OpenAi::R50k | OpenAi::P50k => &[("<|endoftext|>", 50256)],
            OpenAi::Cl100k => &[
                ("<|endoftext|>", 100257),
                ("<|fim_prefix|>", 100258),
                ("<|fim_middle|>", 100259),
                ("<|fim_suffix|>", 100260),
                ("<|endofprompt|>", 100276),
            ],
            OpenAi::O200k => &[("<|endoftext|>", 199999), ("<|endofprompt|>", 200018)],
        };
        list.iter().map(|(s, id)| (s.to_string(), *id)).collect()
    }

    /// tiktoken's `n_vocab`: highest id + 1.
    fn n_vocab(self) -> u32 {
        match self {
            OpenAi::R50k => 50257,
            OpenAi::P50k => 50281,
            OpenAi::Cl100k => 100277,
            OpenAi::O200k => 200019,
        }
    }

    /// The BPE, its ranks taken from the rank file `tiktoken-rs` embeds.
    fn load(self) -> Result<Bpe> {
        let core = match self {
            OpenAi::R50k => tiktoken_rs::r50k_base(),
            OpenAi::P50k => tiktoken_rs::p50k_base(),
            OpenAi::Cl100k => tiktoken_rs::cl100k_base(),
            OpenAi::O200k => tiktoken_rs::o200k_base(),
        }
        .map_err(|e| Error::Tokenizer {
            name: self.name().into(),
            reason: e.to_string(),
        })?;
        let specials = self.specials();
        let ranks: Vec<(Vec<u8>, Rank)> = (0..self.n_vocab())
            .filter(|id| specials.iter().all(|(_, s)| s != id))
            .filter_map(|id| core.decode_bytes(&[id]).ok().map(|bytes| (bytes, id)))
            .collect();
        // Freeing its tables takes longer than building ours: not on the critical path.
        std::thread::spawn(move || drop(core));
        Ok(Bpe::new(ranks, self.pattern(), specials))
    }
}

/// Which tokenizer to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenizerSpec {
    /// An OpenAI encoding (offline).
    OpenAi(OpenAi),
    /// A Hugging Face `tokenizer.json`.
    HuggingFace(PathBuf),
}

impl TokenizerSpec {
    /// `gpt2`, `cl100k_base`, ... or a path to a `tokenizer.json`.
    pub fn parse(text: &str) -> Self {
        match OpenAi::from_name(text) {
            Some(enc) => TokenizerSpec::OpenAi(enc),
            None => TokenizerSpec::HuggingFace(PathBuf::from(text)),
        }
    }
}

enum Engine {
    Bpe(Bpe),
    Hf(Box<tokenizers::Tokenizer>),
}

/// A loaded tokenizer with its policy for special tokens in the text.
pub struct Tokenizer {
    engine: Engine,
    name: String,
    vocab_size: u32,
    allow_special: bool,
    file_sha256: Option<String>,
}

/// End-of-document tokens tried, in order, when a Hugging Face tokenizer is given
/// without `--eod-token`.
pub const EOD_CANDIDATES: [&str; 5] = [
    "<|endoftext|>",
    "<|end_of_text|>",
    "</s>",
    "<eos>",
    "<|im_end|>",
];

/// Per-thread scratch state of a tokenizer.
#[derive(Default)]
pub struct Scratch {
    cache: Cache,
}

impl Tokenizer {
    /// Loads `spec`. With `allow_special`, special-token text in documents becomes the
    /// special token; otherwise it is encoded as ordinary text.
    pub fn load(spec: &TokenizerSpec, allow_special: bool) -> Result<Self> {
        match spec {
            TokenizerSpec::OpenAi(enc) => Ok(Self {
                engine: Engine::Bpe(enc.load()?),
                name: enc.name().into(),
                vocab_size: enc.n_vocab(),
                allow_special,
                file_sha256: None,
            }),
            TokenizerSpec::HuggingFace(path) => Self::load_hf(path, allow_special),
        }
    }

    fn load_hf(path: &Path, allow_special: bool) -> Result<Self> {
        let bad = |reason: String| Error::Tokenizer {
            name: path.display().to_string(),
            reason,
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            // A name that is neither built in nor a file: say which names are.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad(
                    "is neither a built-in name (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) nor an existing tokenizer.json file (a Hugging Face model's, by path)".into(),
                ));
            }
            Err(e) => return Err(Error::io("reading tokenizer", path, e)),
        };
        let mut tok = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            bad(format!(
                "not an OpenAI encoding name (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) and not a readable tokenizer.json: {e}"
            ))
        })?;
        tok.with_padding(None);
        tok.with_truncation(None).map_err(|e| bad(e.to_string()))?;
        tok.set_encode_special_tokens(!allow_special);
        let vocab_size = tok.get_vocab(true).values().max().map_or(0, |max| max + 1);
        Ok(Self {
            engine: Engine::Hf(Box::new(tok)),
            name: path.display().to_string(),
            vocab_size,
            allow_special,
            file_sha256: Some(shardsmith_manifest::sha256_hex(&bytes)),
        })
    }

    /// Name as recorded in the manifest: the encoding or the tokenizer.json path.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Highest id + 1.
    pub fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    /// SHA-256 of the tokenizer.json, for Hugging Face tokenizers.
    pub fn file_sha256(&self) -> Option<&str> {
        self.file_sha256.as_deref()
    }

    /// The id of `token` (a special or added token), if the tokenizer has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        match &self.engine {
            Engine::Bpe(bpe) => bpe
                .specials()
                .iter()
                .find(|(s, _)| s == token)
                .map(|(_, id)| *id),
            Engine::Hf(tok) => tok.token_to_id(token),
        }
    }

    /// The end-of-document token: `wanted`, or the first of [`EOD_CANDIDATES`] the
    /// tokenizer has. Returns (token, id).
    pub fn eod(&self, wanted: Option<&str>) -> Result<(String, u32)> {
        if let Some(token) = wanted {
            return self
                .token_id(token)
                .map(|id| (token.to_string(), id))
                .ok_or_else(|| Error::Tokenizer {
                    name: self.name.clone(),
                    reason: format!("has no token `{token}` (--eod-token)"),
                });
        }
        EOD_CANDIDATES
            .iter()
            .find_map(|t| self.token_id(t).map(|id| (t.to_string(), id)))
            .ok_or_else(|| Error::Tokenizer {
                name: self.name.clone(),
                reason: format!(
                    "has none of the usual end-of-document tokens ({}); name it with --eod-token, or use --no-eod",
                    EOD_CANDIDATES.join(", ")
                ),
            })
    }

    /// Appends the ids of `text` to `out`.
    pub fn encode(
        &self,
        text: &str,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) -> std::result::Result<(), EncodeError> {
        match &self.engine {
            Engine::Bpe(bpe) if self.allow_special => {
                bpe.encode_with_special(text, &mut scratch.cache, out)
            }
            Engine::Bpe(bpe) => bpe.encode_ordinary(text, &mut scratch.cache, out),
            Engine::Hf(tok) => {
                let encoding = tok.encode_fast(text, false).map_err(EncodeError)?;
                out.extend_from_slice(encoding.get_ids());
            }
        }
        Ok(())
    }
}

/// A text the Hugging Face tokenizer refused; the Display is its own message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EncodeError(tokenizers::Error);

#[cfg(test)]
mod tests;
