//! How input paths become sample keys and fields, following the WebDataset readers.
//!
//! The key is the path up to the first dot of the basename, the field is the rest,
//! lowercased (`cat/0001.seg.PNG` → key `cat/0001`, field `seg.png`), exactly as
//! `webdataset` groups tar members. Names that a reader drops or mis-keys are refused
//! here, with the reason, instead of being written into a shard.

/// Why a path cannot be packed as a sample field; the text completes "`path` ...".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The basename starts with a dot.
    #[error("is a hidden file (name starts with a dot): webdataset drops such members")]
    Hidden,
    /// The basename has no dot.
    #[error("has no extension: webdataset drops such members and wids keys them differently")]
    NoExtension,
    /// The basename ends with its first dot.
    #[error("has an empty extension (name ends with a dot)")]
    EmptyExtension,
    /// The extension is not ASCII.
    #[error("has a non-ASCII extension: readers disagree on how to lowercase it")]
    NonAsciiExtension,
    /// The extension starts with `__`.
    #[error("has extension `{0}`: names starting with `__` are reserved for reader metadata")]
    ReservedExtension(String),
    /// The first component is `__name__`.
    #[error("starts with a `__name__` component: webdataset skips such members as metadata")]
    MetaName,
}

/// True for a file name prefix safe in brace-expanded shard URLs and listings: ASCII
/// letters, digits, `-`, `_` and `.`, not starting with a dot.
pub fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && !prefix.starts_with('.')
        && prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits a `/`-separated relative path into `(key, field)`, or says why it cannot be
/// packed.
pub fn split_key(rel: &str) -> Result<(&str, String), NameError> {
    let base_start = rel.rfind('/').map_or(0, |i| i + 1);
    let base = &rel[base_start..];
    if base.starts_with('.') {
        return Err(NameError::Hidden);
    }
    let Some(dot) = base.find('.') else {
        return Err(NameError::NoExtension);
    };
    let key = &rel[..base_start + dot];
    let ext = &base[dot + 1..];
    if ext.is_empty() {
        return Err(NameError::EmptyExtension);
    }
    if !ext.is_ascii() {
        return Err(NameError::NonAsciiExtension);
    }
    if ext.starts_with("__") {
        return Err(NameError::ReservedExtension(ext.to_string()));
    }
    if is_meta_name(rel) {
        return Err(NameError::MetaName);
    }
    Ok((key, ext.to_ascii_lowercase()))
}

/// True when webdataset's `skip_meta` pattern `__[^/]*__($|/)` matches at the start of
/// the member name.
pub fn is_meta_name(name: &str) -> bool {
    let first = name.split('/').next().unwrap_or_default();
    let has_more = first.len() < name.len();
    first.len() >= 4
        && first.starts_with("__")
        && first.ends_with("__")
        && (has_more || first.len() == name.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_fields_follow_the_first_dot_of_the_basename() {
        assert_eq!(
            split_key("cat/0001.jpg").unwrap(),
            ("cat/0001", "jpg".into())
        );
        assert_eq!(
            split_key("a.b/c.seg.PNG").unwrap(),
            ("a.b/c", "seg.png".into())
        );
        assert_eq!(split_key("x.JSON").unwrap(), ("x", "json".into()));
        assert_eq!(
            split_key("zürich/ö.txt").unwrap(),
            ("zürich/ö", "txt".into())
        );
    }

    #[test]
    fn names_readers_mishandle_are_refused() {
        for (rel, why) in [
            ("dir/noext", "no extension"),
            ("dir/.hidden", "hidden"),
            (".DS_Store", "hidden"),
            ("a.", "empty extension"),
            ("a.jpé", "non-ASCII"),
            ("a.__key__", "reserved"),
            ("__meta__/x.jpg", "metadata"),
            ("__x__.y__", "metadata"),
        ] {
            let err = split_key(rel).unwrap_err().to_string();
            assert!(err.contains(why), "{rel}: {err}");
        }
        assert!(split_key("a/__meta__/x.jpg").is_ok());
        assert!(split_key("__a.jpg").is_ok());
    }
}
