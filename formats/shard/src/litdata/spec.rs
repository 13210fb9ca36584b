//! LitData's `data_spec`: the pytree `TreeSpec` of every item, as
//! `litdata.utilities._pytree.treespec_dumps` writes it: `json.dumps([1, schema])`, where
//! a node's schema is `{"type", "context", "children_spec"}` in that order, a leaf
//! `{"type": null, "context": null, "children_spec": []}`, and a dict's context is the
//! `json.dumps` text of its keys in item order.
//!
//! Writing, an item is one dict: `__key__` then the fields. Reading, the leaves of any
//! tree of dicts, lists and tuples are named by their path: dict keys and list positions
//! joined by `.` (`meta.size.0`); a tree that is one leaf is the field `value`.

use serde_json::Value;

use crate::mds::pyjson;

/// The key of an item's dict that holds its sample key.
pub const KEY: &str = "__key__";

/// The field a pytree that is a single leaf becomes.
pub const SINGLE_LEAF: &str = "value";

const LEAF: &str = r#"{"type": null, "context": null, "children_spec": []}"#;

/// `treespec_dumps` of a flat dict whose keys are `keys`, in order.
pub fn dict_spec(keys: &[&str]) -> String {
    let names = Value::from(keys.iter().map(|k| Value::from(*k)).collect::<Vec<_>>());
    let context = pyjson::dumps(&Value::from(pyjson::dumps(&names)));
    let children = vec![LEAF; keys.len()].join(", ");
    format!(
        r#"[1, {{"type": "builtins.dict", "context": {context}, "children_spec": [{children}]}}]"#
    )
}

/// Why a `data_spec` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// Not the JSON of `[protocol, schema]`.
    #[error("data_spec is not a pytree spec: {0}")]
    Shape(String),
    /// A node type that is no dict, list or tuple.
    #[error("data_spec has a `{0}` node, which shardsmith does not read (dicts, lists and tuples)")]
    Type(String),
}

/// The field name of every leaf of the spec, in leaf order.
pub fn leaf_names(data_spec: &str) -> Result<Vec<String>, SpecError> {
    let value: Value =
        serde_json::from_str(data_spec).map_err(|e| SpecError::Shape(e.to_string()))?;
    let schema = value
        .as_array()
        .filter(|a| a.len() == 2)
        .map(|a| &a[1])
        .ok_or_else(|| SpecError::Shape("not a [protocol, schema] pair".into()))?;
    let mut names = Vec::new();
    walk(schema, "", &mut names)?;
    if names.len() == 1 && names[0].is_empty() {
        names[0] = SINGLE_LEAF.to_string();
    }
    Ok(names)
}

fn walk(node: &Value, path: &str, names: &mut Vec<String>) -> Result<(), SpecError> {
    let children = node["children_spec"]
        .as_array()
        .ok_or_else(|| SpecError::Shape("a node without children_spec".into()))?;
    let Some(kind) = node["type"].as_str() else {
        if children.is_empty() {
            names.push(path.to_string());
            return Ok(());
        }
        return Err(SpecError::Shape(
            "a node without a type has children".into(),
        ));
    };
    let labels: Vec<String> = match kind {
        "builtins.dict" | "collections.OrderedDict" | "collections.defaultdict" => {
            let context = node["context"]
                .as_str()
                .ok_or_else(|| SpecError::Shape(format!("a {kind} node without context")))?;
            let context: Value =
                serde_json::from_str(context).map_err(|e| SpecError::Shape(e.to_string()))?;
            // defaultdict's context is [default_factory, keys].
            let keys = match kind {
                "collections.defaultdict" => &context[1],
                _ => &context,
            };
            keys.as_array()
                .ok_or_else(|| SpecError::Shape(format!("a {kind} context that is no list")))?
                .iter()
                .map(|k| match k {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        }
        "builtins.list" | "builtins.tuple" => (0..children.len()).map(|i| i.to_string()).collect(),
        other => return Err(SpecError::Type(other.to_string())),
    };
    if labels.len() != children.len() {
        return Err(SpecError::Shape(format!(
            "a {kind} node with {} keys and {} children",
            labels.len(),
            children.len()
        )));
    }
    for (label, child) in labels.iter().zip(children) {
        let path = if path.is_empty() {
            label.clone()
        } else {
            format!("{path}.{label}")
        };
        walk(child, &path, names)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_is_litdatas_text_and_reads_back() {
        // From `litdata.optimize` of {"__key__": ..., "txt": ..., "raw": ...}.
        let python = r#"[1, {"type": "builtins.dict", "context": "[\"__key__\", \"txt\", \"raw\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]"#;
        assert_eq!(dict_spec(&["__key__", "txt", "raw"]), python);
        assert_eq!(leaf_names(python).unwrap(), ["__key__", "txt", "raw"]);
        let nested = r#"[1, {"type": "builtins.dict", "context": "[\"a\", \"b\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": "builtins.list", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": "builtins.dict", "context": "[\"c\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}]}]}]}]"#;
        assert_eq!(leaf_names(nested).unwrap(), ["a", "b.0", "b.1.c"]);
        let leaf = r#"[1, {"type": null, "context": null, "children_spec": []}]"#;
        assert_eq!(leaf_names(leaf).unwrap(), ["value"]);
        assert!(dict_spec(&["é"]).contains(r#"\"\\u00e9\""#));
    }
}
