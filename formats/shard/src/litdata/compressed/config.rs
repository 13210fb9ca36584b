//! [`Compression`]: what a dataset's `index.json` config says about zstd.

use serde_json::Value;

/// How the items of a dataset's chunks are wrapped in zstd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrap {
    /// Not wrapped.
    None,
    /// The whole chunk file (`compression_level` `chunk`, absent or null).
    Chunk,
    /// `LDFZ01` framed batches of items (`batch`).
    Batch,
    /// Each item its own zstd frame (`sample`).
    Sample,
}

/// The config's `compression` and `compression_level`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compression {
    /// The wrap.
    pub wrap: Wrap,
    /// The `compression` named (`zstd`, `zstd:9`); empty for [`Wrap::None`].
    pub name: String,
}

impl Compression {
    /// No compression.
    pub fn none() -> Self {
        Self {
            wrap: Wrap::None,
            name: String::new(),
        }
    }

    /// Reads `config`; `Err` says why a compression is not read (a codec other than
    /// zstd, an unknown `compression_level`).
    pub fn of_config(config: &Value) -> Result<Self, String> {
        let name = match &config["compression"] {
            Value::Null => return Ok(Self::none()),
            Value::String(name) => name.clone(),
            other => return Err(format!("its compression is {other}, not a codec name")),
        };
        let zstd = name == "zstd"
            || name
                .strip_prefix("zstd:")
                .is_some_and(|l| l.parse::<i32>().is_ok());
        if !zstd {
            return Err(format!(
                "its chunks are compressed with `{name}`, which shardsmith does not read (it reads zstd)"
            ));
        }
        let wrap = match &config["compression_level"] {
            Value::Null => Wrap::Chunk,
            Value::String(level) => match level.trim().to_lowercase().as_str() {
                "" | "chunk" => Wrap::Chunk,
                "batch" => Wrap::Batch,
                "sample" => Wrap::Sample,
                _ => {
                    return Err(format!(
                        "its compression_level is `{level}`, not chunk, batch or sample"
                    ));
                }
            },
            other => {
                return Err(format!(
                    "its compression_level is {other}, not chunk, batch or sample"
                ));
            }
        };
        Ok(Self { wrap, name })
    }

    /// The wrap of chunk file `rel`: [`Wrap::Chunk`] only for files named with the
    /// codec (`chunk-0-0.zstd.bin`), as LitData decompresses only those; a `.bin` of a
    /// `chunk` dataset is plain (footer-only chunks are never compressed whole).
    pub fn wrap_of(&self, rel: &str) -> Wrap {
        if self.wrap != Wrap::Chunk {
            return self.wrap;
        }
        let base = rel.rsplit('/').next().unwrap_or(rel);
        if base.contains(&format!(".{}.", self.name)) {
            Wrap::Chunk
        } else {
            Wrap::None
        }
    }
}
