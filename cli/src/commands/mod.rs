//! One module per subcommand; each returns the process exit status.

pub mod audit;
pub mod diff;
pub mod index;
pub mod list;
pub mod look;
pub mod manifest;
pub mod merge;
pub mod pack;
pub mod shell;
pub mod sign;
pub mod stage;
pub mod tokenize;
pub mod verify;

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Success, or verification clean.
    Clean = 0,
    /// Verification found problems.
    Problems = 1,
}

/// A failed `pack` or `tokenize`: removes the output directory if the run made it and
/// left it empty, and says how to go on when the run's state stayed behind (some shards
/// were committed, so the same command resumes).
pub fn after_failure(err: anyhow::Error, output: &crate::storage::Output) -> anyhow::Error {
    output.discard_if_unused();
    let refused = err
        .chain()
        .find_map(crate::output::typed)
        .is_some_and(|(kind, _)| kind == shardsmith_manifest::ErrorKind::OutputConflict);
    if refused {
        return err;
    }
    let hint = if output.has_state() {
        format!(
            "`{}` keeps the shards this run finished: the same command resumes from them once the cause is fixed; to start over with other input or options, add --force",
            output.show("")
        )
    } else if matches!(output, crate::storage::Output::Remote(_))
        && crate::output::storage_cause(&err)
            .is_some_and(|(kind, _)| kind == shardsmith_manifest::ErrorKind::Storage)
    {
        // The store itself failed, so what it holds cannot be looked at now.
        format!(
            "once the store answers again, the same command resumes from the shards this run finished in `{}` (their state is kept there); to start over, add --force",
            output.show("")
        )
    } else {
        return err;
    };
    anyhow::Error::new(crate::output::Hinted { error: err, hint })
}

/// `{prefix}-{000000..000009}.tar`-style pattern for a list of shard names, when they
/// form one consecutive numbered run.
pub fn brace_pattern(names: &[&str]) -> Option<String> {
    let first = names.first()?;
    let last = names.last()?;
    if names.len() == 1 {
        return Some((*first).to_string());
    }
    let split = |name: &str| -> Option<(String, String, String)> {
        let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
        let start = name[..end]
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        Some((
            name[..start].to_string(),
            name[start..end].to_string(),
            name[end..].to_string(),
        ))
    };
    let (p1, n1, s1) = split(first)?;
    let (p2, n2, s2) = split(last)?;
    (p1 == p2 && s1 == s2 && n1.len() == n2.len()).then(|| format!("{p1}{{{n1}..{n2}}}{s1}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_patterns() {
        assert_eq!(
            brace_pattern(&["shard-000000.tar", "shard-000001.tar", "shard-000009.tar"]).as_deref(),
            Some("shard-{000000..000009}.tar")
        );
        assert_eq!(
            brace_pattern(&["a-000000.tar"]).as_deref(),
            Some("a-000000.tar")
        );
        assert_eq!(brace_pattern(&[]), None);
    }
}
