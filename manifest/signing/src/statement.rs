//! The in-toto statement a model_signing bundle signs: the subject (the directory's name
//! and the SHA-256 over every file's digest, in resource order) and a predicate listing
//! each file's digest. Written as Python's `json.dumps(indent=2)` writes it (what
//! model_signing's pure-Python protobuf writer gives), parsed without assuming any layout.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `_type` of every statement.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// `predicateType` of model_signing v1.0 signatures.
pub const PREDICATE_TYPE: &str = "https://model_signing/signature/v1.0";
/// The only hashing model_signing's CLI verifies: one SHA-256 per whole file.
pub const METHOD: &str = "files";
/// Hash name in `serialization.hash_type` and each resource's `algorithm`.
pub const ALGORITHM: &str = "sha256";

/// One signed file: its `/`-separated path relative to the signed directory (`.` when a
/// single file was signed) and its SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Relative path.
    pub name: String,
    /// SHA-256 of the whole file.
    pub digest: [u8; 32],
}

/// What a statement says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The signed directory's name (informational: model_signing never checks it).
    pub subject: String,
    /// SHA-256 over the resources' raw digests, in order.
    pub root: [u8; 32],
    /// Whether symlinks to files were signed (as their targets' content).
    pub allow_symlinks: bool,
    /// Paths left out of the signature (relative, component prefixes).
    pub ignore_paths: Vec<String>,
    /// Every signed file, in path-component order.
    pub resources: Vec<Resource>,
}

/// SHA-256 over the concatenated raw digests, in the given order.
pub fn root_of(resources: &[Resource]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for r in resources {
        hasher.update(r.digest);
    }
    hasher.finalize().into()
}

/// Orders paths as model_signing does: by their list of components, so `w/a` comes
/// before `w-x` (a plain string sort would put `-` before `/`).
pub fn sort_resources(resources: &mut [Resource]) {
    resources.sort_by(|a, b| a.name.split('/').cmp(b.name.split('/')));
}

impl Statement {
    /// A statement over `resources` (sorted here).
    pub fn new(
        subject: &str,
        mut resources: Vec<Resource>,
        allow_symlinks: bool,
        mut ignore_paths: Vec<String>,
    ) -> Self {
        sort_resources(&mut resources);
        ignore_paths.sort();
        ignore_paths.dedup();
        Statement {
            subject: subject.to_string(),
            root: root_of(&resources),
            allow_symlinks,
            ignore_paths,
            resources,
        }
    }

    /// The payload bytes: indent 2, ASCII only, no trailing newline.
    pub fn to_json(&self) -> Vec<u8> {
        let hex = shardsmith_manifest::hex;
        let mut serialization = vec![
            ("method", J::s(METHOD)),
            ("hash_type", J::s(ALGORITHM)),
            ("allow_symlinks", J::Bool(self.allow_symlinks)),
        ];
        if !self.ignore_paths.is_empty() {
            serialization.push((
                "ignore_paths",
                J::Arr(self.ignore_paths.iter().map(|p| J::s(p)).collect()),
            ));
        }
        let resources = self
            .resources
            .iter()
            .map(|r| {
                J::Obj(vec![
                    ("name", J::s(&r.name)),
                    ("algorithm", J::s(ALGORITHM)),
                    ("digest", J::Str(hex(&r.digest))),
                ])
            })
            .collect();
        let statement = J::Obj(vec![
            ("_type", J::s(STATEMENT_TYPE)),
            (
                "subject",
                J::Arr(vec![J::Obj(vec![
                    ("name", J::s(&self.subject)),
                    ("digest", J::Obj(vec![("sha256", J::Str(hex(&self.root)))])),
                ])]),
            ),
            ("predicateType", J::s(PREDICATE_TYPE)),
            (
                "predicate",
                J::Obj(vec![
                    ("serialization", J::Obj(serialization)),
                    ("resources", J::Arr(resources)),
                ]),
            ),
        ]);
        let mut out = String::new();
        statement.write(&mut out, 0);
        out.into_bytes()
    }

    /// Reads a payload and checks it the way model_signing's verifier does: the types,
    /// one subject, files + SHA-256 only, and a subject digest equal to the SHA-256 over
    /// the resources' digests in their listed order. The error says what is wrong.
    pub fn parse(payload: &[u8]) -> Result<Self, StatementError> {
        let payload = payload.strip_prefix(b"\xef\xbb\xbf").unwrap_or(payload);
        let v: Value = serde_json::from_slice(payload).map_err(StatementError::NotJson)?;
        let text = |v: &Value, what: &'static str| -> Result<String, StatementError> {
            v.as_str()
                .map(str::to_string)
                .ok_or(StatementError::NoString(what))
        };
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
        let method = text(&ser["method"], "predicate.serialization.method")?;
        let hash_type = text(&ser["hash_type"], "predicate.serialization.hash_type")?;
        if method != METHOD || hash_type != ALGORITHM {
            return Err(StatementError::Method { method, hash_type });
        }
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
        let mut resources = Vec::with_capacity(list.len());
        for r in list {
            let name = text(&r["name"], "resources[].name")?;
            let algorithm = text(&r["algorithm"], "resources[].algorithm")?;
            if algorithm != ALGORITHM {
                return Err(StatementError::Algorithm { name, algorithm });
            }
            let digest = text(&r["digest"], "resources[].digest")?;
            let Some(digest) = parse_hex(&digest) else {
                return Err(StatementError::Digest { name });
            };
            resources.push(Resource {
                name: normalize(&name),
                digest,
            });
        }
        let claimed = text(&subject["digest"]["sha256"], "subject[0].digest.sha256")?;
        let root = root_of(&resources);
        if claimed != shardsmith_manifest::hex(&root) {
            return Err(StatementError::Inconsistent {
                claimed,
                computed: shardsmith_manifest::hex(&root),
            });
        }
        Ok(Statement {
            subject: subject["name"].as_str().unwrap_or_default().to_string(),
            root,
            allow_symlinks,
            ignore_paths,
            resources,
        })
    }
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
        "it was made with method `{method}` and hash `{hash_type}`; shardsmith (like model_signing's own verify command) checks `{}` with `{}` only",
        METHOD,
        ALGORITHM
    )]
    Method {
        /// The statement's method.
        method: String,
        /// The statement's hash.
        hash_type: String,
    },
    /// No boolean allow_symlinks.
    #[error("its statement has no boolean predicate.serialization.allow_symlinks")]
    NoAllowSymlinks,
    /// ignore_paths of another JSON type.
    #[error("its ignore_paths is not a list")]
    IgnorePaths,
    /// No resources list.
    #[error("its statement has no predicate.resources list")]
    NoResources,
    /// A resource hashed with another algorithm.
    #[error("resource `{name}` is hashed with `{algorithm}`, not `{}`", ALGORITHM)]
    Algorithm {
        /// The resource.
        name: String,
        /// Its algorithm.
        algorithm: String,
    },
    /// A resource digest that is not 64 hex digits.
    #[error("resource `{name}` has a digest that is not 64 hex digits")]
    Digest {
        /// The resource.
        name: String,
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

/// A resource name as Python's `PurePosixPath` sees it: no `.` or empty components.
fn normalize(name: &str) -> String {
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

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A JSON value with its keys in the order they are written.
enum J {
    Str(String),
    Bool(bool),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

impl J {
    fn s(text: &str) -> J {
        J::Str(text.to_string())
    }

    /// Python's `json.dumps(value, indent=2)` (ensure_ascii, `", "`/`": "` separators).
    fn write(&self, out: &mut String, depth: usize) {
        let pad = |out: &mut String, depth: usize| {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', 2 * depth));
        };
        match self {
            J::Str(s) => escape(s, out),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Arr(items) if items.is_empty() => out.push_str("[]"),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    item.write(out, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            J::Obj(members) if members.is_empty() => out.push_str("{}"),
            J::Obj(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    escape(key, out);
                    out.push_str(": ");
                    value.write(out, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
        }
    }
}

/// A JSON string as Python writes it with `ensure_ascii`: everything outside space..`~`
/// escaped, astral characters as surrogate pairs.
fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_python_json_dumps() {
        let mut out = String::new();
        escape("d/é\"\\\n\u{1}\u{7f}😀~", &mut out);
        assert_eq!(out, r#""d/\u00e9\"\\\n\u0001\u007f\ud83d\ude00~""#);
    }

    #[test]
    fn resources_sort_by_components_and_round_trip() {
        let r = |name: &str, b: u8| Resource {
            name: name.into(),
            digest: [b; 32],
        };
        let s = Statement::new(
            "model",
            vec![r("weights-extra.txt", 1), r("weights/x", 2), r("a", 3)],
            false,
            vec![".git".into()],
        );
        let names: Vec<&str> = s.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "weights/x", "weights-extra.txt"]);
        let back = Statement::parse(&s.to_json()).unwrap();
        assert_eq!(back, s);
        let text = String::from_utf8(s.to_json()).unwrap();
        assert!(text.starts_with("{\n  \"_type\": \"https://in-toto.io/Statement/v1\",\n  \"subject\": [\n    {\n      \"name\": \"model\",\n"), "{text}");
        assert!(!text.ends_with('\n'));
        let empty = Statement::new("m", vec![], false, vec![]);
        assert!(
            String::from_utf8(empty.to_json())
                .unwrap()
                .contains("\"resources\": []")
        );
    }

    #[test]
    fn inconsistent_or_foreign_statements_are_refused() {
        let s = Statement::new(
            "m",
            vec![Resource {
                name: "a".into(),
                digest: [7; 32],
            }],
            false,
            vec![],
        );
        let text = String::from_utf8(s.to_json()).unwrap();
        let bad_root = text.replace(&shardsmith_manifest::hex(&s.root), &"0".repeat(64));
        assert!(
            Statement::parse(bad_root.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("inconsistent")
        );
        let shards = text.replace("\"files\"", "\"shards\"");
        assert!(
            Statement::parse(shards.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("method `shards`")
        );
        assert!(
            Statement::parse(b"[]")
                .unwrap_err()
                .to_string()
                .contains("_type")
        );
        assert_eq!(normalize("./a//b/"), "a/b");
        assert_eq!(normalize("."), ".");
    }
}
