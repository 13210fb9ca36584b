//! Inputs left out of a run, and which of them to name.

use shardsmith_manifest::Skipped;

/// The first left-out input that names a cause, not a side effect: with `--strict` the
/// error must say *why* (`0002.json` is malformed), not that `0002.jpg` went with it.
pub(crate) fn first_cause(skipped: &[Skipped]) -> Option<&Skipped> {
    skipped
        .iter()
        .find(|s| !s.reason.starts_with("left out with `"))
        .or(skipped.first())
}
