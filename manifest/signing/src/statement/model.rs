//! What a statement says: its subject, its serialization and its resources, in
//! model_signing's order, and the payload bytes shardsmith signs.

use sha2::{Digest, Sha256};

use super::json::J;

/// `_type` of every statement.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// `predicateType` of model_signing v1.0 signatures.
pub const PREDICATE_TYPE: &str = "https://model_signing/signature/v1.0";
/// The hash model_signing's key-pair method uses: `serialization.hash_type`, and each
/// resource's `algorithm` with method `files`.
pub const ALGORITHM: &str = "sha256";

/// How the files were cut into resources (`predicate.serialization.method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `files`: one resource per file (model_signing's CLI signs only this way).
    Files,
    /// `shards`: every non-empty file cut into pieces of `shard_size` bytes, the last one
    /// short (model_signing's `use_shard_serialization`).
    Shards {
        /// Bytes per shard, at least 1.
        shard_size: u64,
    },
}

impl Method {
    /// The method's name in `serialization.method`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Files => "files",
            Method::Shards { .. } => "shards",
        }
    }

    /// Each resource's `algorithm`: `sha256`, or `sha256-sharded-N` for shards of N bytes.
    pub fn algorithm(self) -> String {
        match self {
            Method::Files => ALGORITHM.into(),
            Method::Shards { shard_size } => format!("{ALGORITHM}-sharded-{shard_size}"),
        }
    }

    /// The shard size, for method `shards`.
    pub fn shard_size(self) -> Option<u64> {
        match self {
            Method::Files => None,
            Method::Shards { shard_size } => Some(shard_size),
        }
    }
}

/// A shard's bytes: `start` included, `end` not. Ordered by start, then end, as numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl Span {
    /// Its length in bytes.
    pub fn len(self) -> u64 {
        self.end - self.start
    }

    /// True when it holds no byte (never the case for a parsed or cut shard).
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// The shards model_signing cuts a file of `size` bytes into: `[0,N), [N,2N), ...`,
    /// the last one ending at `size`; none for an empty file. `shard_size` is at least 1.
    pub fn cut(size: u64, shard_size: u64) -> impl Iterator<Item = Span> {
        let step = shard_size.max(1);
        (0..size.div_ceil(step)).map(move |i| Span {
            start: i * step,
            end: (i * step).saturating_add(step).min(size),
        })
    }
}

impl std::fmt::Display for Span {
    /// `start..end`, as findings show a byte range.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// One signed resource: a whole file, or one shard of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The file's `/`-separated path relative to the signed directory (`.` when a single
    /// file was signed).
    pub name: String,
    /// The shard's bytes with method `shards`; `None` for a whole file.
    pub span: Option<Span>,
    /// SHA-256 of the file, or of the shard's bytes.
    pub digest: [u8; 32],
}

impl Resource {
    /// A whole file.
    pub fn file(name: impl Into<String>, digest: [u8; 32]) -> Self {
        Resource {
            name: name.into(),
            span: None,
            digest,
        }
    }

    /// The bytes `span` of a file.
    pub fn shard(name: impl Into<String>, span: Span, digest: [u8; 32]) -> Self {
        Resource {
            name: name.into(),
            span: Some(span),
            digest,
        }
    }

    /// The name the statement records: the path, or `path:start:end` for a shard.
    pub fn label(&self) -> String {
        match self.span {
            None => self.name.clone(),
            Some(s) => format!("{}:{}:{}", self.name, s.start, s.end),
        }
    }
}

/// What a statement says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// The signed directory's name (informational: model_signing never checks it).
    pub subject: String,
    /// SHA-256 over the resources' raw digests, in order.
    pub root: [u8; 32],
    /// How the files were cut into resources.
    pub method: Method,
    /// Whether symlinks to files were signed (as their targets' content).
    pub allow_symlinks: bool,
    /// Paths left out of the signature (relative, component prefixes).
    pub ignore_paths: Vec<String>,
    /// Every signed file or shard, in model_signing's order.
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

/// Orders resources as model_signing does (its `_File` and `_Shard` keys): paths by
/// their list of components, so `w/a` comes before `w-x` (a plain string sort would put
/// `-` before `/`), then a file's shards by start and end as numbers (`1000` after
/// `200`).
pub fn sort_resources(resources: &mut [Resource]) {
    resources.sort_by(|a, b| {
        a.name
            .split('/')
            .cmp(b.name.split('/'))
            .then(a.span.cmp(&b.span))
    });
}

impl Statement {
    /// A statement over `resources` (sorted here) made with `method`.
    pub fn new(
        subject: &str,
        method: Method,
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
            method,
            allow_symlinks,
            ignore_paths,
            resources,
        }
    }

    /// The number of files it covers (a file cut into shards counts once, wherever the
    /// statement lists its shards).
    pub fn files(&self) -> usize {
        let names: std::collections::BTreeSet<&str> =
            self.resources.iter().map(|r| r.name.as_str()).collect();
        names.len()
    }

    /// The payload bytes: indent 2, ASCII only, no trailing newline. The serialization's
    /// keys in model_signing's order; `shard_size` an integer.
    pub fn to_json(&self) -> Vec<u8> {
        let hex = shardsmith_manifest::hex;
        let mut serialization = vec![
            ("method", J::s(self.method.name())),
            ("hash_type", J::s(ALGORITHM)),
        ];
        if let Method::Shards { shard_size } = self.method {
            serialization.push(("shard_size", J::Int(shard_size)));
        }
        serialization.push(("allow_symlinks", J::Bool(self.allow_symlinks)));
        if !self.ignore_paths.is_empty() {
            serialization.push((
                "ignore_paths",
                J::Arr(self.ignore_paths.iter().map(|p| J::s(p)).collect()),
            ));
        }
        let algorithm = self.method.algorithm();
        let resources = self
            .resources
            .iter()
            .map(|r| {
                J::Obj(vec![
                    ("name", J::Str(r.label())),
                    ("algorithm", J::s(&algorithm)),
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
}
