//! Every `--json` report the integration tests read through `util::run_json` is checked
//! against the committed JSON Schema (`cli/report.schema.json`, generated from the
//! report types), with a small validator of the keywords that schema uses. An unknown
//! keyword fails rather than passing unchecked.

use std::sync::OnceLock;

use serde_json::Value;

use crate::util::*;

fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("report.schema.json");
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    })
}

/// Panics, naming where and why, when `report` is not valid under the schema: under
/// none of the reports of its command (or of the error object).
pub fn check(report: &Value) {
    if validate(schema(), report, "$").is_ok() {
        return;
    }
    let command = match report.get("error") {
        Some(_) => "any command that cannot run (exit 2)".to_string(),
        None => format!("`{}`", report["command"].as_str().unwrap_or_default()),
    };
    let why: Vec<String> = schema()["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|option| option["description"].as_str() == Some(&command))
        .filter_map(|option| validate(option, report, "$").err())
        .collect();
    panic!(
        "report does not match cli/report.schema.json as a report of {command}: {}\nreport: {report:#}",
        why.join("; or ")
    );
}

fn validate(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(rules) = schema.as_object() else {
        return match schema {
            Value::Bool(true) => Ok(()),
            _ => Err(format!("{at}: not allowed here")),
        };
    };
    for (keyword, rule) in rules {
        match keyword.as_str() {
            "$schema" | "$defs" | "title" | "description" | "default" => {}
            "$ref" => {
                let name = rule.as_str().unwrap().trim_start_matches("#/$defs/");
                validate(&self::schema()["$defs"][name], value, at)?;
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t],
                    other => other
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|t| t.as_str().unwrap())
                        .collect(),
                };
                if !types.iter().any(|t| has_type(value, t)) {
                    return Err(format!("{at}: {value} is not of type {types:?}"));
                }
            }
            "format" => check_format(rule.as_str().unwrap(), value, at)?,
            "minimum" | "maximum" => {
                if let (Some(n), Some(bound)) = (value.as_f64(), rule.as_f64())
                    && (if keyword == "minimum" {
                        n < bound
                    } else {
                        n > bound
                    })
                {
                    return Err(format!("{at}: {n} is beyond the {keyword} {bound}"));
                }
            }
            "const" => {
                if value != rule {
                    return Err(format!("{at}: {value} is not {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(value) {
                    return Err(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "properties" | "required" | "additionalProperties" => {
                if let Some(object) = value.as_object() {
                    check_object(rules, object, at)?;
                }
            }
            "items" => {
                if let Some(items) = value.as_array() {
                    for (i, item) in items.iter().enumerate() {
                        validate(rule, item, &format!("{at}[{i}]"))?;
                    }
                }
            }
            "minItems" | "maxItems" => {
                if let Some(items) = value.as_array() {
                    let n = rule.as_u64().unwrap() as usize;
                    let fits = if keyword == "minItems" {
                        items.len() >= n
                    } else {
                        items.len() <= n
                    };
                    if !fits {
                        return Err(format!("{at}: {} items against {keyword} {n}", items.len()));
                    }
                }
            }
            "anyOf" | "oneOf" => {
                let options = rule.as_array().unwrap();
                let failures: Vec<String> = options
                    .iter()
                    .filter_map(|option| validate(option, value, at).err())
                    .collect();
                let matched = options.len() - failures.len();
                if matched == 0 || (keyword == "oneOf" && matched > 1) {
                    return Err(format!(
                        "{at}: {matched} of the {keyword} options match ({})",
                        failures.join("; ")
                    ));
                }
            }
            other => return Err(format!("{at}: the validator does not know `{other}`")),
        }
    }
    Ok(())
}

fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => value.is_u64() || value.is_i64(),
        other => panic!("unknown type `{other}` in the schema"),
    }
}

fn check_format(format: &str, value: &Value, at: &str) -> Result<(), String> {
    let fits = match format {
        "uint" | "uint8" | "uint16" | "uint32" | "uint64" => !value.is_number() || value.is_u64(),
        "int" | "int32" | "int64" => !value.is_number() || value.is_i64() || value.is_u64(),
        "double" | "float" => true,
        other => {
            return Err(format!(
                "{at}: the validator does not know format `{other}`"
            ));
        }
    };
    if fits {
        Ok(())
    } else {
        Err(format!("{at}: {value} is not a {format}"))
    }
}

/// `properties`, `required` and `additionalProperties` of one object, checked once.
fn check_object(
    rules: &serde_json::Map<String, Value>,
    object: &serde_json::Map<String, Value>,
    at: &str,
) -> Result<(), String> {
    let empty = serde_json::Map::new();
    let properties = rules
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for required in rules
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = required.as_str().unwrap();
        if !object.contains_key(key) {
            return Err(format!("{at}: required key `{key}` is missing"));
        }
    }
    for (key, value) in object {
        let inner = format!("{at}.{key}");
        match (properties.get(key), rules.get("additionalProperties")) {
            (Some(rule), _) => validate(rule, value, &inner)?,
            (None, Some(Value::Bool(false))) => {
                return Err(format!("{inner}: a key the schema does not name"));
            }
            (None, Some(rule)) => validate(rule, value, &inner)?,
            (None, None) => {}
        }
    }
    Ok(())
}

#[test]
fn the_validator_refuses_what_the_schema_does_not_allow() {
    let t = Tree::new();
    let (code, report) = run_json(&[
        "manifest",
        samples().to_str().unwrap(),
        "-o",
        &t.s("m.json"),
    ]);
    assert_eq!(code, 0, "{report}");
    let mut extra = report.clone();
    extra["surprise"] = Value::Bool(true);
    assert!(
        validate(schema(), &extra, "$")
            .unwrap_err()
            .contains("surprise")
    );
    let mut missing = report.clone();
    missing.as_object_mut().unwrap().remove("root_sha256");
    assert!(validate(schema(), &missing, "$").is_err());
    let mut wrong = report.clone();
    wrong["files"] = Value::from(-1);
    assert!(validate(schema(), &wrong, "$").is_err());
    let mut finding = report;
    finding["warnings"] = serde_json::json!([{"kind": "no_such_kind"}]);
    assert!(validate(schema(), &finding, "$").is_err());
}

#[test]
fn reports_no_other_test_reads_match_the_schema() {
    let t = Tree::new();
    // The error object of a command that cannot run.
    let (code, _) = run_json(&["verify", &t.s("nosuch")]);
    assert_eq!(code, 2);
    // A task of a split tokenize run, and of a split pack run.
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/corpus.jsonl");
    let (code, report) = run_json(&[
        "tokenize",
        corpus.to_str().unwrap(),
        &t.s("tok"),
        "-t",
        "gpt2",
        "--task-index",
        "0",
        "--task-count",
        "2",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["task_count"], 2, "{report}");
    let (code, report) = run_json(&[
        "pack",
        samples().to_str().unwrap(),
        &t.s("packed"),
        "--task-index",
        "1",
        "--task-count",
        "2",
    ]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["task"]["index"], 1, "{report}");
}
