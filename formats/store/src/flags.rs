//! A run's recorded options shown as the flags that set them, for the messages that
//! refuse a run whose options differ from what the output holds: `--format parquet`,
//! `--shard-size 1MiB`, not the manifest's JSON.

use serde_json::Value;

/// `value` of option `key` as the flag (and value) a user types; `None` is the option
/// left unset.
pub fn flag(key: &str, value: Option<&Value>) -> String {
    let value = value.filter(|v| !v.is_null());
    match (key, value) {
        ("eod", Some(Value::Bool(false))) => "`--no-eod`".into(),
        ("eod", _) => "no `--no-eod`".into(),
        ("shuffle_seed", Some(v)) => format!("`--shuffle --seed {v}`"),
        ("shuffle_seed", None) => "no `--shuffle`".into(),
        ("row_group_bytes" | "row_group_rows", Some(v)) => {
            format!("`--row-group-size {}`", shown(key, v))
        }
        ("columns", Some(v)) => format!("fields {v}"),
        (_, Some(Value::Bool(true))) => format!("`{}`", name(key)),
        (_, Some(Value::Bool(false)) | None) => format!("no `{}`", name(key)),
        (_, Some(v)) => format!("`{} {}`", name(key), shown(key, v)),
    }
}

/// The flag of option `key`.
fn name(key: &str) -> String {
    match key {
        "validation" => "--validate".into(),
        "eod_token" | "eod_id" => "--eod-token".into(),
        _ => format!("--{}", key.replace('_', "-")),
    }
}

/// A value as typed: sizes in binary units where exact, lists comma-separated, strings
/// bare.
fn shown(key: &str, value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(","),
        Value::Number(n) if key.ends_with("size") || key.ends_with("bytes") => {
            let n = n.as_u64().unwrap_or_default();
            ["GiB", "MiB", "KiB"]
                .iter()
                .zip([30, 20, 10])
                .find(|(_, shift)| n >= 1 << shift && n % (1 << shift) == 0)
                .map_or_else(
                    || n.to_string(),
                    |(unit, shift)| format!("{}{unit}", n >> shift),
                )
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_read_as_the_flags_that_set_them() {
        assert_eq!(
            flag("shard_size", Some(&json!(268435456))),
            "`--shard-size 256MiB`"
        );
        assert_eq!(
            flag("shard_size", Some(&json!(1000))),
            "`--shard-size 1000`"
        );
        assert_eq!(flag("prefix", Some(&json!("x"))), "`--prefix x`");
        assert_eq!(flag("compression", None), "no `--compression`");
        assert_eq!(
            flag("compression", Some(&json!("gz:6"))),
            "`--compression gz:6`"
        );
        assert_eq!(flag("eod", Some(&json!(false))), "`--no-eod`");
        assert_eq!(flag("eod", Some(&json!(true))), "no `--no-eod`");
        assert_eq!(
            flag("shuffle_seed", Some(&json!(7))),
            "`--shuffle --seed 7`"
        );
        assert_eq!(
            flag("hashes", Some(&json!(["xxh64", "sha1"]))),
            "`--hashes xxh64,sha1`"
        );
        assert_eq!(
            flag("validation", Some(&json!("full"))),
            "`--validate full`"
        );
        assert_eq!(
            flag("allow_special", Some(&json!(true))),
            "`--allow-special`"
        );
    }
}
