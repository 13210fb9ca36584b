//! `diff --map`: renaming rules applied to the first checkpoint's tensor names before
//! they are matched with the second's. A rule file has one rule per line,
//! `PATTERN -> REPLACEMENT`; `*` in the pattern matches any run of characters (the
//! shortest that lets the rest match) and each `*` of the replacement takes the text
//! the same-numbered `*` matched. The first rule that matches a name renames it; a name
//! no rule matches is kept. Blank lines and lines starting with `#` are ignored.
//!
//! ```text
//! # torch.save({"model": sd}) against a bare state dict
//! model.* -> *
//! transformer.h.*.mlp.c_fc.weight -> model.layers.*.mlp.up_proj.weight
//! ```

use crate::error::RuleError;

/// One rule: the pattern's literal parts around its `*`s, and the replacement's.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    pattern: Vec<String>,
    replacement: Vec<String>,
}

/// Renaming rules, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapRules {
    rules: Vec<Rule>,
}

impl MapRules {
    /// Parses the rule file `text` (named `path` in errors).
    pub fn parse(text: &str, path: &str) -> Result<Self, crate::Error> {
        let mut rules = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason: &str| {
                crate::Error::from(RuleError {
                    path: path.to_string(),
                    line: line_no,
                    reason: reason.to_string(),
                })
            };
            let (from, to) = line
                .split_once("->")
                .ok_or_else(|| err("expected `PATTERN -> REPLACEMENT`"))?;
            let (from, to) = (from.trim(), to.trim());
            if from.is_empty() {
                return Err(err("the pattern is empty"));
            }
            let pattern: Vec<String> = from.split('*').map(str::to_string).collect();
            let replacement: Vec<String> = to.split('*').map(str::to_string).collect();
            if pattern.len() > 2 && pattern[1..pattern.len() - 1].iter().any(String::is_empty) {
                return Err(err("two `*` side by side cannot be told apart"));
            }
            if replacement.len() > pattern.len() {
                return Err(err(&format!(
                    "the replacement has {} `*`, the pattern only {}",
                    replacement.len() - 1,
                    pattern.len() - 1
                )));
            }
            rules.push(Rule {
                pattern,
                replacement,
            });
        }
        Ok(Self { rules })
    }

    /// True when there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `name` renamed by the first rule that matches it, else unchanged.
    pub fn apply(&self, name: &str) -> String {
        for rule in &self.rules {
            if let Some(captures) = matches(&rule.pattern, name) {
                let mut out = rule.replacement[0].clone();
                for (i, part) in rule.replacement[1..].iter().enumerate() {
                    out.push_str(captures[i]);
                    out.push_str(part);
                }
                return out;
            }
        }
        name.to_string()
    }
}

/// The texts the `*`s between `parts` match in `name` (each the shortest possible),
/// or `None`.
fn matches<'n>(parts: &[String], name: &'n str) -> Option<Vec<&'n str>> {
    let (first, rest) = parts.split_first()?;
    let mut at = name.strip_prefix(first.as_str())?;
    if rest.is_empty() {
        return at.is_empty().then(Vec::new);
    }
    let mut captures = Vec::with_capacity(rest.len());
    let (last, middle) = rest.split_last()?;
    for part in middle {
        let found = at.find(part.as_str())?;
        captures.push(&at[..found]);
        at = &at[found + part.len()..];
    }
    let tail = at.strip_suffix(last.as_str())?;
    captures.push(tail);
    Some(captures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_layers_are_renamed() {
        let rules = MapRules::parse(
            "# comment\n\nmodel.* -> *\ntransformer.h.*.mlp.c_fc.weight -> model.layers.*.mlp.up_proj.weight\n",
            "map.txt",
        )
        .unwrap();
        assert_eq!(rules.apply("model.w"), "w");
        assert_eq!(
            rules.apply("transformer.h.11.mlp.c_fc.weight"),
            "model.layers.11.mlp.up_proj.weight"
        );
        assert_eq!(rules.apply("lm_head.weight"), "lm_head.weight");
    }

    #[test]
    fn captures_are_used_in_order_and_can_be_dropped() {
        let rules = MapRules::parse("a.*.b.*.c -> x.*.y.*\nq.*.r -> s\n", "m").unwrap();
        assert_eq!(rules.apply("a.1.b.2.c"), "x.1.y.2");
        assert_eq!(rules.apply("q.anything.r"), "s");
        assert_eq!(rules.apply("a.1.b.2.d"), "a.1.b.2.d");
    }

    #[test]
    fn malformed_rules_name_their_line() {
        let err = MapRules::parse("ok -> fine\nno arrow here\n", "map.txt").unwrap_err();
        assert_eq!(
            err.to_string(),
            "map.txt line 2: expected `PATTERN -> REPLACEMENT`"
        );
        let err = MapRules::parse("a -> *\n", "m").unwrap_err();
        assert_eq!(
            err.to_string(),
            "m line 1: the replacement has 1 `*`, the pattern only 0"
        );
    }
}
