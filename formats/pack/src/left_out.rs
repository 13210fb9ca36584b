//! Inputs left out of a run, and which of them to name.

use shardsmith_manifest::Skipped;
use shardsmith_shard::content::Validation;

/// The first left-out input that names a cause, not a side effect: with `--strict` the
/// error must say *why* (`0002.json` is malformed), not that `0002.jpg` went with it.
pub(crate) fn first_cause(skipped: &[Skipped]) -> Option<&Skipped> {
    skipped
        .iter()
        .find(|s| !s.reason.starts_with("left out with `"))
        .or(skipped.first())
}

/// What to add when every input was left out and the content checks were on: which
/// checks, and how to pack the fields as they are.
pub(crate) fn validation_note(level: Validation) -> String {
    let name = match level {
        Validation::None => return String::new(),
        Validation::Cheap => "cheap",
        Validation::Full => "full",
    };
    format!(
        " (the content checks of `--validate {name}` leave out a sample whose file fails them; `--validate none` packs every field as it is)"
    )
}
