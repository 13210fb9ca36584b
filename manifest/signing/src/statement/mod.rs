//! The in-toto statement a model_signing bundle signs: the subject (the directory's name
//! and the SHA-256 over every resource's digest, in resource order) and a predicate that
//! says how the files were cut into resources (`serialization`) and lists each
//! resource's digest. Two serializations, as model_signing 1.x has them:
//!
//! - `files`: one resource per file, named by its path, `algorithm` `sha256`;
//! - `shards`: every non-empty file cut into `shard_size`-byte pieces `[0,N), [N,2N),
//!   ...` (the last one short), each a resource named `path:start:end`, `algorithm`
//!   `sha256-sharded-N`; an empty file has no resource.
//!
//! Written as Python's `json.dumps(indent=2)` writes it (what model_signing's
//! pure-Python protobuf writer gives) ([`json`]), parsed without assuming any layout and
//! checked the way model_signing's verifier checks it, plus the shape of the shards
//! ([`parse`]).

mod json;
mod model;
mod parse;

pub use model::{
    ALGORITHM, Method, PREDICATE_TYPE, Resource, STATEMENT_TYPE, Span, Statement, root_of,
    sort_resources,
};
pub use parse::StatementError;

#[cfg(test)]
mod tests;
