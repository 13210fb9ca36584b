//! Who runs a command: a refusal names the way that caller changes what it asked for
//! (`--force` on the command line, `force=True` in Python).

/// The front end a command was called from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// The `shardsmith` command.
    Cli,
    /// The Python API (`import shardsmith`).
    Python,
}

impl Caller {
    /// A switch turned on: `--force`, or `force=True`.
    pub fn switch(self, name: &str) -> String {
        match self {
            Self::Cli => format!("--{name}"),
            Self::Python => format!("{}=True", name.replace('-', "_")),
        }
    }

    /// An option's name: `--expect-root`, or `expect_root`.
    pub fn option(self, name: &str) -> String {
        match self {
            Self::Cli => format!("--{name}"),
            Self::Python => name.replace('-', "_"),
        }
    }

    /// A command run on `arg`, quoted: `` `shardsmith verify DIR` ``, or
    /// ``shardsmith.verify(`DIR`)``.
    pub fn command(self, command: &str, arg: &str) -> String {
        match self {
            Self::Cli => format!("`shardsmith {command} {arg}`"),
            Self::Python => format!("shardsmith.{command}(`{arg}`)"),
        }
    }

    /// Refuses an object store URL where this caller reads local paths only (the
    /// Python API).
    pub fn need_local(self, path: &std::path::Path, command: &str) -> anyhow::Result<()> {
        match path.to_str() {
            Some(text) if self == Self::Python && text.contains("://") => crate::output::refuse!(
                Unsupported,
                "`{text}` is a URL: the Python API reads local paths only; use the CLI (`shardsmith {command} {text}`), or `shardsmith stage` it to a local directory first"
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Caller;

    #[test]
    fn spellings() {
        assert_eq!(Caller::Cli.switch("allow-empty"), "--allow-empty");
        assert_eq!(Caller::Python.switch("allow-empty"), "allow_empty=True");
        assert_eq!(Caller::Python.option("expect-root"), "expect_root");
        assert_eq!(Caller::Cli.command("verify", "d"), "`shardsmith verify d`");
        assert_eq!(
            Caller::Python.command("verify", "d"),
            "shardsmith.verify(`d`)"
        );
        assert!(
            Caller::Cli
                .need_local("s3://b/p".as_ref(), "verify")
                .is_ok()
        );
        let err = Caller::Python
            .need_local("s3://b/p".as_ref(), "verify")
            .unwrap_err();
        assert!(err.to_string().contains("local paths only"), "{err}");
    }
}
