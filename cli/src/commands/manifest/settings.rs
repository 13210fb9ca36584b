//! `manifest`'s settings: the directory checked (it exists, holds no unfinished run, has
//! no manifest unless `--force`) before any file is hashed.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use shardsmith_manifest::MANIFEST_FILE;
use shardsmith_store::Location;

use crate::args::ManifestArgs;
use crate::caller::Caller;
use crate::output::refuse;
use shardsmith_manifest::ErrorKind;

/// What `manifest` describes and where it writes, resolved from its arguments.
#[derive(Debug)]
pub struct Settings {
    /// The directory or prefix as given.
    pub dir: PathBuf,
    pub(super) remote: Option<Arc<shardsmith_store::object::Remote>>,
    pub(super) output: Option<PathBuf>,
    pub(super) force: bool,
    pub(super) tensors: bool,
    pub(super) accept_unfinished: bool,
    pub(super) caller: Caller,
}

impl Settings {
    /// Checks the arguments and, for a local directory, that it exists, holds no
    /// unfinished run and has no manifest yet (unless `--force`).
    pub fn resolve(args: &ManifestArgs, caller: Caller) -> Result<Self> {
        caller.need_local(&args.dir, "manifest")?;
        let remote = match crate::storage::location(&args.dir)? {
            Location::Remote(remote) => {
                if args.tensors {
                    refuse!(
                        Unsupported,
                        "--tensors reads checkpoint files at random: run it on a local copy (`shardsmith stage {} DIR`)",
                        remote.url("")
                    );
                }
                Some(remote)
            }
            Location::Local(_) => None,
        };
        let settings = Self {
            dir: args.dir.clone(),
            remote,
            output: args.output.clone(),
            force: args.force,
            tensors: args.tensors,
            accept_unfinished: args.accept_unfinished,
            caller,
        };
        if settings.remote.is_none() {
            settings.check_local()?;
        }
        Ok(settings)
    }

    fn check_local(&self) -> Result<()> {
        crate::output::need_directory(&self.dir)?;
        if !self.accept_unfinished
            && let Some(run) = shardsmith_manifest::unfinished::in_directory(&self.dir)
        {
            return Err(self.unfinished(self.dir.display().to_string(), &run).into());
        }
        let target = self.target();
        if std::path::Path::new(&target).exists() && !self.force {
            return Err(self.exists(&target));
        }
        Ok(())
    }

    /// Where the manifest goes: `--output`, or `DIR/manifest.json`.
    pub(super) fn target(&self) -> String {
        match (&self.output, &self.remote) {
            (Some(path), _) => path.display().to_string(),
            (None, Some(remote)) => remote.url(MANIFEST_FILE),
            (None, None) => self.dir.join(MANIFEST_FILE).display().to_string(),
        }
    }

    /// The refusal to replace a manifest without `--force`.
    pub(super) fn exists(&self, target: &str) -> anyhow::Error {
        let dir = match &self.remote {
            Some(remote) => remote.url(""),
            None => self.dir.display().to_string(),
        };
        crate::output::fail(
            ErrorKind::OutputConflict,
            target,
            format!(
                "`{target}` already exists; {} to replace it (or {} to check against it)",
                match self.caller {
                    Caller::Cli => "use --force".to_string(),
                    Caller::Python => "pass force=True".to_string(),
                },
                self.caller.command("verify", &dir)
            ),
        )
    }

    /// The refusal to describe part of a dataset as a whole one.
    pub(super) fn unfinished(
        &self,
        location: String,
        run: &shardsmith_manifest::unfinished::Unfinished,
    ) -> shardsmith_store::Error {
        shardsmith_store::Error::Unfinished {
            location,
            what: run.describe(),
            advice: format!(
                "a manifest of it would pass part of a dataset off as the whole, and the run could no longer resume; {}; or add {} to describe the files as they are",
                run.how_to_finish(),
                self.caller.switch("accept-unfinished")
            ),
        }
    }
}
