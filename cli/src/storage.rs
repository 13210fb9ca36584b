//! Where a command's paths point: the local file system or an object store. The global
//! storage flags are read once; every command turns its path arguments into
//! [`Location`]s here, and writes through [`Output`].

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use shardsmith_store::{LocalDir, Location, ObjectDir, OutputSink, StorageOptions};

use crate::args::GlobalArgs;
use crate::output::refuse;
use shardsmith_manifest::ErrorKind;

static OPTIONS: OnceLock<StorageOptions> = OnceLock::new();

/// Reads `--io-concurrency`, `--retries` and `--storage-option`.
pub fn configure(global: &GlobalArgs) -> Result<()> {
    let mut options = StorageOptions::default();
    if let Some(n) = global.io_concurrency {
        if n == 0 {
            refuse!(Setting, "--io-concurrency must be at least 1");
        }
        options.io_concurrency = n;
    }
    if let Some(n) = global.retries {
        options.retries = n;
    }
    if let Some(secs) = global.storage_timeout {
        if !(secs.is_finite() && secs > 0.0) {
            refuse!(
                Setting,
                "--storage-timeout must be a number of seconds above 0, e.g. --storage-timeout 300"
            );
        }
        options.timeout = std::time::Duration::from_secs_f64(secs);
    }
    if !global.quiet {
        options.on_retry = Some(retry_notice());
    }
    for pair in &global.storage_option {
        let (key, value) = pair.split_once('=').with_context(|| {
            format!(
                "--storage-option `{}`: expected KEY=VALUE, e.g. aws_region=us-east-1",
                pair.split('=').next().unwrap_or_default()
            )
        })?;
        options
            .options
            .push((key.trim().to_string(), value.to_string()));
    }
    let _ = OPTIONS.set(options);
    Ok(())
}

/// Says on stderr what is being retried: at most one line a second, with how many other
/// retries it stands for, so that many requests failing at once are one line.
fn retry_notice() -> shardsmith_store::OnRetry {
    let last = std::sync::Mutex::new((None::<std::time::Instant>, 0u64));
    std::sync::Arc::new(move |retry: &shardsmith_store::Retry| {
        let mut last = last.lock().unwrap();
        if last
            .0
            .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
        {
            last.1 += 1;
            return;
        }
        let more = match std::mem::take(&mut last.1) {
            0 => String::new(),
            n => format!(" ({n} more retried since the last line)"),
        };
        last.0 = Some(std::time::Instant::now());
        eprintln!("storage: {retry}{more}");
    })
}

fn options() -> &'static StorageOptions {
    OPTIONS.get_or_init(StorageOptions::default)
}

/// The location a path argument names (a plain path, `file://`, `s3://`, `gs://`,
/// `az://`, `abfs[s]://`).
pub fn location(path: &Path) -> Result<Location> {
    let text = path.to_str().unwrap_or_default();
    if Location::is_remote(text) || text.contains("://") {
        return Ok(Location::parse(text, options())?);
    }
    Ok(Location::Local(path.to_path_buf()))
}

/// True when `path` names an object store location.
pub fn is_remote(path: &Path) -> bool {
    path.to_str().is_some_and(Location::is_remote)
}

/// The files at `location` as an input: a local directory tree or the objects under a
/// prefix, everything listed.
pub fn source(location: &Location) -> Box<dyn shardsmith_store::InputSource> {
    match location {
        Location::Local(path) => Box::new(shardsmith_store::LocalTree::new(path)),
        Location::Remote(remote) => Box::new(shardsmith_store::ObjectTree::new(remote.clone())),
    }
}

/// A small file named by a path or URL (a list of files): where it is, and its name
/// there. A remote one is the object `NAME` under the prefix before it.
fn file_at(path: &Path) -> Result<(Location, String)> {
    let text = path.to_str().unwrap_or_default();
    if is_remote(path) {
        let (parent, name) = text
            .trim_end_matches('/')
            .rsplit_once('/')
            .filter(|(parent, name)| {
                !name.is_empty() && !parent.ends_with(':') && !parent.ends_with("//")
            })
            .ok_or_else(|| anyhow::anyhow!("`{text}` names no object: write s3://BUCKET/KEY"))?;
        return Ok((location(Path::new(parent))?, name.to_string()));
    }
    let Location::Local(local) = location(path)? else {
        return Err(crate::output::fail(
            ErrorKind::NotAFile,
            text,
            format!("`{text}` is not a file"),
        ));
    };
    let name = local
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow::anyhow!("`{}` is not a file name", local.display()))?
        .to_string();
    let parent = match local.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    Ok((Location::Local(parent), name))
}

/// The whole of the small file at `path` (a local path or an object URL).
pub fn read_small(path: &Path) -> Result<Vec<u8>> {
    use shardsmith_store::{InputSource, ObjectTree, ReadError};
    use std::io::Read;
    let (at, name) = file_at(path)?;
    let shown = path.display();
    let mut bytes = Vec::new();
    match at {
        Location::Local(dir) => {
            bytes = std::fs::read(dir.join(&name)).with_context(|| format!("reading `{shown}`"))?;
        }
        Location::Remote(remote) => {
            let mut reader = match ObjectTree::new(remote).open(&name) {
                Ok(reader) => reader,
                Err(ReadError::Vanished) => {
                    return Err(crate::output::fail(
                        ErrorKind::NotFound,
                        &shown,
                        format!("`{shown}` does not exist"),
                    ));
                }
                Err(e) => {
                    return Err(anyhow::Error::new(std::io::Error::from(e)))
                        .with_context(|| format!("reading `{shown}`"));
                }
            };
            reader
                .read_to_end(&mut bytes)
                .with_context(|| format!("reading `{shown}`"))?;
        }
    }
    Ok(bytes)
}

/// Writes `bytes` as the file at `path` (a local path or an object URL): under a
/// temporary name then renamed, or as one PUT, so no reader finds it half-written.
pub fn write_small(path: &Path, bytes: &[u8]) -> Result<()> {
    let (at, name) = file_at(path)?;
    Output::create(&at)?.sink().write_atomic(&name, bytes)?;
    Ok(())
}

/// An output being written: a local directory or an object store prefix.
pub enum Output {
    /// A local directory.
    Local(LocalDir),
    /// A prefix in an object store.
    Remote(ObjectDir),
}

impl Output {
    /// The output at `location` (a local directory is created, with its parents).
    pub fn create(location: &Location) -> Result<Self> {
        Ok(match location {
            Location::Local(path) => {
                // An output is a directory: say so, not the OS's "File exists".
                if let Ok(meta) = std::fs::metadata(path)
                    && !meta.is_dir()
                {
                    let shown = path.display().to_string();
                    return Err(crate::output::CliError {
                        kind: ErrorKind::NotADirectory,
                        message: format!(
                            "output `{shown}` is a file, not a directory: the output is a directory (created if missing) or an object store prefix; choose another"
                        ),
                        path: Some(shown),
                    }
                    .into());
                }
                Output::Local(LocalDir::create(path)?)
            }
            Location::Remote(remote) => Output::Remote(ObjectDir::new(remote.clone())),
        })
    }

    /// The sink to write through.
    pub fn sink(&self) -> &dyn OutputSink {
        match self {
            Output::Local(dir) => dir,
            Output::Remote(dir) => dir,
        }
    }

    /// How `name` in the output is shown (a path or a URL).
    pub fn show(&self, name: &str) -> String {
        match self {
            Output::Local(dir) if name.is_empty() => dir.path().display().to_string(),
            Output::Local(dir) => dir.path().join(name).display().to_string(),
            Output::Remote(dir) => dir.remote().url(name),
        }
    }

    /// Removes what [`Output::create`] made if nothing was written (a local directory).
    pub fn discard_if_unused(&self) {
        if let Output::Local(dir) = self {
            dir.discard_if_unused();
        }
    }

    /// True when the output holds resume state (a failed run left finished shards).
    pub fn has_state(&self) -> bool {
        let state = shardsmith_store::resume::STATE_DIR;
        match self {
            Output::Local(dir) => dir.path().join(state).exists(),
            Output::Remote(dir) => dir
                .list()
                .is_ok_and(|names| names.iter().any(|n| n == state)),
        }
    }
}
