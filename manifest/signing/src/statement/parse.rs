//! Reading a payload: the checks model_signing's verifier makes (types, one subject, a
//! serialization it knows, a subject digest that matches the resources), and, for
//! shards, that each resource name is `path:start:end` and that each file's shards tile
//! it as model_signing cuts files.

use std::collections::BTreeMap;

use serde_json::Value;

use super::model::{ALGORITHM, Method, PREDICATE_TYPE, Resource, STATEMENT_TYPE, Span, Statement};

impl Statement {
    /// Reads a payload and checks it the way model_signing's verifier does: the types,
    /// one subject, method `files` or `shards` with SHA-256, and a subject digest equal to
    /// the SHA-256 over the resources' digests in their listed order; with shards, also
    /// that every file's shards tile it. The error says what is wrong.
    pub fn parse(payload: &[u8]) -> Result<Self, StatementError> {
        let payload = payload.strip_prefix(b"\xef\xbb\xbf").unwrap_or(payload);
        let v: Value = serde_json::from_slice(payload).map_err(StatementError::NotJson)?;
        let kind = text(&v["_type"], "_type")?;
        if kind != STATEMENT_TYPE {
            return Err(StatementError::StatementType(kind));
        }
        let predicate_type = text(&v["predicateType"], "predicateType")?;
        if predicate_type != PREDICATE_TYPE {
            return Err(StatementError::PredicateType(predicate_type));
        }
        let subjects = v["subject"].as_array().ok_or(StatementError::NoSubjects)?;
        let [subject] = subjects.as_slice() else {
            return Err(StatementError::Subjects(subjects.len()));
        };
        let ser = &v["predicate"]["serialization"];
        let method = method(ser)?;
        let allow_symlinks = ser["allow_symlinks"]
            .as_bool()
            .ok_or(StatementError::NoAllowSymlinks)?;
        let ignore_paths = match &ser["ignore_paths"] {
            Value::Null => Vec::new(),
            Value::Array(items) => items
                .iter()
                .map(|p| text(p, "ignore_paths[]"))
                .collect::<Result<_, _>>()?,
            _ => return Err(StatementError::IgnorePaths),
        };
        let list = v["predicate"]["resources"]
            .as_array()
            .ok_or(StatementError::NoResources)?;
        let expected = method.algorithm();
        let mut resources = Vec::with_capacity(list.len());
        for r in list {
            let name = text(&r["name"], "resources[].name")?;
            let algorithm = text(&r["algorithm"], "resources[].algorithm")?;
            if algorithm != expected {
                return Err(StatementError::Algorithm {
                    name,
                    algorithm,
                    expected,
                });
            }
            let digest = text(&r["digest"], "resources[].digest")?;
            let Some(digest) = shardsmith_manifest::parse_sha256(&digest) else {
                return Err(StatementError::Digest { name });
            };
            resources.push(match method {
                Method::Files => Resource::file(normalize(&name), digest),
                Method::Shards { .. } => {
                    let (path, span) = shard_name(&name)?;
                    Resource::shard(path, span, digest)
                }
            });
        }
        let claimed = text(&subject["digest"]["sha256"], "subject[0].digest.sha256")?;
        let root = super::model::root_of(&resources);
        if claimed != shardsmith_manifest::hex(&root) {
            return Err(StatementError::Inconsistent {
                claimed,
                computed: shardsmith_manifest::hex(&root),
            });
        }
        if let Method::Shards { shard_size } = method {
            tiles(&resources, shard_size)?;
        }
        Ok(Statement {
            subject: subject["name"].as_str().unwrap_or_default().to_string(),
            root,
            method,
            allow_symlinks,
            ignore_paths,
            resources,
        })
    }
}

fn text(v: &Value, what: &'static str) -> Result<String, StatementError> {
    v.as_str()
        .map(str::to_string)
        .ok_or(StatementError::NoString(what))
}

/// The serialization's method and hash: `files` or `shards` (with its shard size),
/// SHA-256 only.
fn method(ser: &Value) -> Result<Method, StatementError> {
    let method = text(&ser["method"], "predicate.serialization.method")?;
    let hash_type = text(&ser["hash_type"], "predicate.serialization.hash_type")?;
    if hash_type != ALGORITHM {
        return Err(StatementError::Method { method, hash_type });
    }
    match method.as_str() {
        "files" => Ok(Method::Files),
        "shards" => Ok(Method::Shards {
            shard_size: shard_size(&ser["shard_size"])?,
        }),
        _ => Err(StatementError::Method { method, hash_type }),
    }
}

/// `shard_size`: a whole number of bytes above 0, written as an integer (shardsmith,
/// JSON made by hand) or as a float with an integral value (model_signing's Python API
/// writes its payload through a protobuf Struct, whose numbers are doubles: `1000.0`).
fn shard_size(value: &Value) -> Result<u64, StatementError> {
    /// The largest integer a double holds exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let size = match value {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(n), _) => Some(n),
            (None, Some(f)) if f.fract() == 0.0 && (1.0..=EXACT).contains(&f) => Some(f as u64),
            _ => None,
        },
        _ => None,
    };
    match size {
        Some(n) if n > 0 => Ok(n),
        _ => Err(StatementError::ShardSize(value.to_string())),
    }
}

/// `path:start:end` as model_signing's `_Shard.from_str` reads it (exactly two `:`),
/// with decimal offsets and `end` after `start`.
fn shard_name(name: &str) -> Result<(String, Span), StatementError> {
    let bad = |reason: &str| StatementError::ShardName {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let parts: Vec<&str> = name.split(':').collect();
    let [path, start, end] = parts.as_slice() else {
        return Err(bad(
            "it is not `path:start:end` (exactly two `:`, as model_signing requires)",
        ));
    };
    let offset = |text: &str| -> Option<u64> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        text.parse().ok()
    };
    let (Some(start), Some(end)) = (offset(start), offset(end)) else {
        return Err(bad("its start and end are not byte offsets"));
    };
    if end <= start {
        return Err(bad("its end is not after its start"));
    }
    Ok((normalize(path), Span { start, end }))
}

/// Every file's shards, in offset order, are `[0,N), [N,2N), ...` with only the last one
/// shorter than N: what model_signing cuts a file into. Overlaps, gaps, duplicates and
/// shards of another size are refused: no file of any size has them.
fn tiles(resources: &[Resource], shard_size: u64) -> Result<(), StatementError> {
    let mut files: BTreeMap<&str, Vec<Span>> = BTreeMap::new();
    for r in resources {
        if let Some(span) = r.span {
            files.entry(&r.name).or_default().push(span);
        }
    }
    for (path, mut spans) in files {
        spans.sort_unstable();
        let bad = |span: Span, reason: String| StatementError::Tiling {
            path: path.to_string(),
            span,
            reason,
        };
        let mut at = 0;
        let last = spans.len() - 1;
        for (i, span) in spans.into_iter().enumerate() {
            if span.start != at {
                return Err(bad(
                    span,
                    if span.start < at {
                        format!("it overlaps the shard that ends at byte {at}")
                    } else if at == 0 {
                        "no shard starts at byte 0".into()
                    } else {
                        format!("no shard covers bytes {at}..{}", span.start)
                    },
                ));
            }
            if span.len() > shard_size || (i < last && span.len() < shard_size) {
                return Err(bad(
                    span,
                    format!(
                        "it is {} bytes, and every shard but a file's last is {shard_size} (the shard size)",
                        span.len()
                    ),
                ));
            }
            at = span.end;
        }
    }
    Ok(())
}

/// Why a payload is not a statement shardsmith checks; its Display is the finding's text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatementError {
    /// The payload does not parse as JSON.
    #[error("its statement is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// A field that is missing or not a string.
    #[error("its statement has no string `{0}`")]
    NoString(&'static str),
    /// Another statement type.
    #[error("its statement type is `{0}`, not `{kind}`", kind = STATEMENT_TYPE)]
    StatementType(String),
    /// Another predicate type.
    #[error(
        "its predicate type is `{0}`, not `{kind}` (a model_signing v1.0 signature)",
        kind = PREDICATE_TYPE
    )]
    PredicateType(String),
    /// No subject list.
    #[error("its statement has no `subject` list")]
    NoSubjects,
    /// Not exactly one subject.
    #[error("its statement has {0} subjects, not one")]
    Subjects(usize),
    /// A serialization method or hash shardsmith does not check.
    #[error(
        "it was made with method `{method}` and hash `{hash_type}`; shardsmith checks methods `files` and `shards` with `{}` only",
        ALGORITHM
    )]
    Method {
        /// The statement's method.
        method: String,
        /// The statement's hash.
        hash_type: String,
    },
    /// A shards statement whose shard size is not a whole number of bytes above 0.
    #[error("its predicate.serialization.shard_size is {0}, not a whole number of bytes above 0")]
    ShardSize(String),
    /// No boolean allow_symlinks.
    #[error("its statement has no boolean predicate.serialization.allow_symlinks")]
    NoAllowSymlinks,
    /// ignore_paths of another JSON type.
    #[error("its ignore_paths is not a list")]
    IgnorePaths,
    /// No resources list.
    #[error("its statement has no predicate.resources list")]
    NoResources,
    /// A resource hashed with another algorithm than its method's.
    #[error("resource `{name}` is hashed with `{algorithm}`, not `{expected}`")]
    Algorithm {
        /// The resource.
        name: String,
        /// Its algorithm.
        algorithm: String,
        /// The method's (`sha256`, `sha256-sharded-N`).
        expected: String,
    },
    /// A resource digest that is not 64 hex digits.
    #[error("resource `{name}` has a digest that is not 64 hex digits")]
    Digest {
        /// The resource.
        name: String,
    },
    /// A shard resource whose name is not `path:start:end`.
    #[error("shard resource `{name}` is malformed: {reason}")]
    ShardName {
        /// The resource name as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Shards of one file that are not the pieces model_signing cuts a file into.
    #[error("the shards of `{path}` do not tile it: bytes {span}: {reason}")]
    Tiling {
        /// The file.
        path: String,
        /// The first shard that does not fit.
        span: Span,
        /// How it does not fit.
        reason: String,
    },
    /// A subject digest that does not match the resources.
    #[error(
        "its statement is inconsistent: the subject digest is {claimed}, but its resources hash to {computed}"
    )]
    Inconsistent {
        /// The subject digest as written.
        claimed: String,
        /// The digest over the resources.
        computed: String,
    },
}

/// A resource path as Python's `PurePosixPath` sees it: no `.` or empty components.
pub(super) fn normalize(name: &str) -> String {
    let parts: Vec<&str> = name
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}
