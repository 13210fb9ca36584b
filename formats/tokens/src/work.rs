//! A worker's job: one batch of records → each document's tokens, framed with the
//! end-of-document token and encoded as the output's dtype, or the reason a record is
//! not a document. Runs on many threads at once, so the writer only copies bytes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use super::batch::{Batch, Position, RecordKind};
use super::tokenizer::{Scratch, Tokenizer};
use super::write::{TokenDtype, TokenFormat};

/// How a document's ids become the bytes of a token file: where the end-of-document
/// token goes (as each consumer expects), the dtype, and the vocabulary every id must be
/// inside.
#[derive(Clone, Copy, Debug)]
pub struct Framing {
    /// The output format (where the end-of-document token goes).
    pub format: TokenFormat,
    /// The end-of-document token, if added.
    pub eod: Option<u32>,
    /// The token type written.
    pub dtype: TokenDtype,
    /// Ids must be below this.
    pub vocab: u32,
    /// Take each document's text digest (`--dedup`).
    pub digest: bool,
}

/// The digest `tokenize --dedup` compares documents by: the first 16 bytes of the
/// SHA-256 of the text (finding two texts with one digest takes about 2^64 work).
pub type TextDigest = [u8; 16];

fn text_digest(text: &str) -> TextDigest {
    use sha2::Digest;
    let full = sha2::Sha256::digest(text.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

impl Framing {
    /// Appends the document of `ids` to `out`, framed and encoded; returns its token
    /// count, or the first id outside the vocabulary (nothing appended then).
    pub fn frame(&self, ids: &[u32], out: &mut Vec<u8>) -> Result<u64, u32> {
        // Megatron: an empty document gets none (a document without sequences).
        let eod: &[u32] = match &self.eod {
            Some(eod) if !(self.format == TokenFormat::Megatron && ids.is_empty()) => {
                std::slice::from_ref(eod)
            }
            _ => &[],
        };
        let start = out.len();
        let parts: [&[u32]; 2] = if self.format == TokenFormat::Llmc {
            [eod, ids]
        } else {
            [ids, eod]
        };
        for part in parts {
            if let Err(bad) = self.dtype.encode(part, self.vocab, out) {
                out.truncate(start);
                return Err(bad);
            }
        }
        Ok((ids.len() + eod.len()) as u64)
    }
}

/// One record's outcome.
#[derive(Debug)]
pub struct DocOut {
    /// Where the record starts. The line of a JSON line is set by the writer, which
    /// counts lines in input order (a worker reading a byte range in the middle of a
    /// file does not know it).
    pub pos: Position,
    /// A JSON line (numbered by the writer).
    pub json: bool,
    /// Its tokens, framed, in [`Tokenized::bytes`] (after the previous document's).
    pub tokens: u64,
    /// Why it is not a document.
    pub problem: Option<String>,
    /// An id outside the vocabulary: the document cannot be written.
    pub out_of_vocabulary: Option<u32>,
    /// With `--dedup`: its text's digest.
    pub digest: Option<TextDigest>,
    /// Bytes of its text.
    pub text_bytes: u64,
}

/// A tokenized batch.
#[derive(Debug, Default)]
pub struct Tokenized {
    /// Every record, in order.
    pub docs: Vec<DocOut>,
    /// The framed and encoded tokens of all documents, concatenated.
    pub bytes: Vec<u8>,
    /// Input bytes the batch consumed.
    pub input_bytes: u64,
}

/// A worker's reusable state: the tokenizer's scratch and the ids of one document.
#[derive(Default)]
pub struct WorkerScratch {
    tokenizer: Scratch,
    ids: Vec<u32>,
}

/// Tokenizes every record of `batch` into `out` (its buffers reused); JSON records take
/// their text from `field`.
pub fn tokenize_batch(
    batch: &Batch,
    tokenizer: &Tokenizer,
    field: &str,
    framing: &Framing,
    scratch: &mut WorkerScratch,
    out: &mut Tokenized,
) {
    out.docs.clear();
    out.bytes.clear();
    out.docs.reserve(batch.records.len());
    out.bytes.reserve(batch.data.len());
    out.input_bytes = batch.input_bytes;
    for record in &batch.records {
        let bytes = &batch.data[record.range.clone()];
        let text = match &record.kind {
            RecordKind::Json => json_text(bytes, field).map_err(|e| e.to_string()),
            RecordKind::Text => std::str::from_utf8(bytes)
                .map(Cow::Borrowed)
                .map_err(|e| e.to_string()),
            RecordKind::Bad(reason) => Err(reason.clone()),
        };
        let ids = &mut scratch.ids;
        ids.clear();
        let digest = match &text {
            Ok(text) if framing.digest => Some(text_digest(text)),
            _ => None,
        };
        let text_bytes = text.as_ref().map_or(0, |t| t.len() as u64);
        let problem = match text {
            Ok(text) => tokenizer
                .encode(&text, &mut scratch.tokenizer, ids)
                .err()
                .map(|e| e.to_string()),
            Err(reason) => Some(reason),
        };
        let (tokens, out_of_vocabulary) = match problem {
            Some(_) => (0, None),
            None => match framing.frame(ids, &mut out.bytes) {
                Ok(n) => (n, None),
                Err(bad) => (0, Some(bad)),
            },
        };
        out.docs.push(DocOut {
            pos: record.pos,
            json: record.kind == RecordKind::Json,
            tokens,
            problem,
            out_of_vocabulary,
            digest,
            text_bytes,
        });
    }
}

/// Why a JSON line holds no text to tokenize: the reason its record is left out.
#[derive(Debug, thiserror::Error)]
pub enum JsonTextError {
    /// A blank line.
    #[error("empty line (expected a JSON object)")]
    EmptyLine,
    /// Not one JSON object (a syntax error, an array, trailing text).
    #[error("not a JSON object: {0}")]
    NotAnObject(serde_json::Error),
    /// The field holds something other than a string.
    #[error("field `{field}` is {kind}, not a string")]
    NotAString {
        /// The field.
        field: String,
        /// What it holds ("null", "an array", ...).
        kind: &'static str,
    },
    /// The object has no such field.
    #[error("no field `{field}` (choose the text field with --field)")]
    NoField {
        /// The field.
        field: String,
    },
}

/// The string under `field` of the JSON object on `line`.
pub fn json_text<'a>(line: &'a [u8], field: &str) -> Result<Cow<'a, str>, JsonTextError> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(JsonTextError::EmptyLine);
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let found = FieldSeed { field }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(JsonTextError::NotAnObject)?;
    match found {
        Some(Found::Text(text)) => Ok(text),
        Some(Found::Other(kind)) => Err(JsonTextError::NotAString {
            field: field.into(),
            kind,
        }),
        None => Err(JsonTextError::NoField {
            field: field.into(),
        }),
    }
}

enum Found<'a> {
    Text(Cow<'a, str>),
    Other(&'static str),
}

struct FieldSeed<'f> {
    field: &'f str,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Option<Found<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Option<Found<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if key.0 == self.field {
                // The last occurrence wins, as in Python's json.loads.
                found = Some(map.next_value::<Value<'de>>()?.0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A string, borrowed from the line when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Str<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor).map(Str)
    }
}

struct StrVisitor;

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// The field's value: a string, or the kind of what it is instead.
struct Value<'a>(Found<'a>);

impl<'de> de::Deserialize<'de> for Value<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(Value)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Found::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Found::Text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Found::Text(Cow::Owned(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Found::Other("null"))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Found::Other("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Found::Other("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Found::Other("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Found::Other("a number"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Found::Other("an object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_extraction() {
        let get = |line: &str| {
            json_text(line.as_bytes(), "text")
                .map(|t| t.into_owned())
                .map_err(|e| e.to_string())
        };
        assert_eq!(get(r#"{"id": 1, "text": "héllo"}"#).unwrap(), "héllo");
        assert_eq!(get(r#"{"text": "a\nb\u00e9"}  "#).unwrap(), "a\nbé");
        assert!(matches!(
            json_text(br#"{"text":"plain"}"#, "text").unwrap(),
            Cow::Borrowed(_)
        ));
        assert_eq!(get(r#"{"text": "a", "text": "b"}"#).unwrap(), "b");
        assert_eq!(
            get(r#"{"meta": {"text": 1}, "text": ""}"#).unwrap(),
            "",
            "nested fields of the same name are not the field"
        );
        for (line, why) in [
            (r#"{"id": 1}"#, "no field `text`"),
            (r#"{"text": null}"#, "is null"),
            (r#"{"text": ["a"]}"#, "an array"),
            (r#"{"text": "a"} trailing"#, "not a JSON object"),
            (r#"{"text": "unterminated"#, "not a JSON object"),
            (r#"["text"]"#, "not a JSON object"),
            ("", "empty line"),
            (r#"{"text": "\ud800"}"#, "not a JSON object"),
        ] {
            let err = get(line).unwrap_err();
            assert!(err.contains(why), "{line}: {err}");
        }
        assert!(json_text(b"{\"text\": \"\xff\"}", "text").is_err());
    }
}
