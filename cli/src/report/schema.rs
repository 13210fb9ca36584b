//! The JSON Schema of every `--json` report, derived from the report types (and the
//! library types they embed) by `schemars`. `cli/report.schema.json` is this document;
//! a unit test holds the file equal to it, and the integration tests check every
//! report they read against the file (`tests/project/report_schema.rs`).
//!
//! Every object is closed (`additionalProperties: false`): a key that a report prints
//! and the schema does not name fails, as does one the schema requires and a report
//! leaves out.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use super::*;

/// The report types, by the command that prints them: `(command, type name in $defs)`
/// and the generator's entry for each.
fn reports(generator: &mut schemars::SchemaGenerator) -> Vec<(&'static str, Value)> {
    fn entry<T: JsonSchema>(
        generator: &mut schemars::SchemaGenerator,
        command: &'static str,
    ) -> (&'static str, Value) {
        (command, generator.subschema_for::<T>().to_value())
    }
    vec![
        entry::<Audit<'static>>(generator, "audit"),
        entry::<HfCacheAudit<'static>>(generator, "audit"),
        entry::<Diff>(generator, "diff"),
        entry::<Index>(generator, "index"),
        entry::<List>(generator, "list"),
        entry::<LsCheckpoint<'static>>(generator, "ls"),
        entry::<LsSamples<'static>>(generator, "ls"),
        entry::<LsShards<'static>>(generator, "ls"),
        entry::<LsTokens<'static>>(generator, "ls"),
        entry::<Manifest<'static>>(generator, "manifest"),
        entry::<Merge<'static>>(generator, "merge"),
        entry::<Pack<'static>>(generator, "pack"),
        entry::<Sign>(generator, "sign"),
        entry::<SignRefused<'static>>(generator, "sign"),
        entry::<Stage>(generator, "stage"),
        entry::<StageMismatch>(generator, "stage"),
        entry::<Stats<'static>>(generator, "stats"),
        entry::<Tokenize<'static>>(generator, "tokenize"),
        entry::<TokenizeTask<'static>>(generator, "tokenize"),
        entry::<Verify<'static>>(generator, "verify"),
        entry::<Error<'static>>(generator, "any command that cannot run (exit 2)"),
    ]
}

/// The schema document: valid for any report of any command.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let reports = reports(&mut generator);
    let mut defs = Value::Object(generator.take_definitions(true));
    close_objects(&mut defs);
    let any_of: Vec<Value> = reports
        .iter()
        .map(|(command, entry)| {
            let mut entry = entry.clone();
            if let Some(object) = entry.as_object_mut() {
                object.insert("description".into(), json!(format!("`{command}`")));
            }
            entry
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "shardsmith --json reports",
        "description": "What `shardsmith COMMAND --json` prints on stdout: one object, the report of the command (exit 0 or 1) or the error object (exit 2). Generated from the report types (cli/src/report); regenerate with `SHARDSMITH_BLESS=1 cargo test -p shardsmith-cli --lib report::schema`.",
        "anyOf": any_of,
        "$defs": defs,
    })
}

/// `additionalProperties: false` on every object schema that lists its properties.
fn close_objects(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.contains_key("properties") && !object.contains_key("additionalProperties") {
                object.insert("additionalProperties".into(), Value::Bool(false));
            }
            for child in object.values_mut() {
                close_objects(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// The document as committed: pretty-printed, one trailing newline.
pub fn text() -> String {
    let mut out = serde_json::to_string_pretty(&schema()).expect("a schema serialises");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed file is the generated schema; `SHARDSMITH_BLESS=1` rewrites it.
    #[test]
    fn the_committed_schema_is_the_generated_one() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("report.schema.json");
        let generated = text();
        if std::env::var_os("SHARDSMITH_BLESS").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is not the schema of the report types: regenerate it with `SHARDSMITH_BLESS=1 cargo test -p shardsmith-cli --lib report::schema` and review the diff",
            path.display()
        );
    }

    #[test]
    fn every_object_is_closed_and_every_report_is_named() {
        let schema = schema();
        let defs = schema["$defs"].as_object().unwrap();
        for name in [
            "Verify",
            "Pack",
            "Error",
            "Finding",
            "LsShards",
            "TokenizeTask",
        ] {
            assert!(defs.contains_key(name), "{name} missing from $defs");
        }
        assert_eq!(defs["Verify"]["additionalProperties"], false);
        assert_eq!(defs["Finding"]["additionalProperties"], false);
    }
}
