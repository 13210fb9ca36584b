//! What a DCP `.metadata` pickle lists: its bytes items and where every item is stored.

use crate::pickle::Pickle;

/// The fully qualified names of the bytes items of a DCP `.metadata` (values that are
/// not tensors, `torch.save`d whole into a data file: a step, an optimizer's
/// hyper-parameters): the entries of `state_dict_metadata` without chunks.
pub fn dcp_bytes_items(p: &Pickle) -> Vec<String> {
    let Some(items) = p.get(p.root, "state_dict_metadata") else {
        return Vec::new();
    };
    p.dict_entries(items)
        .unwrap_or(&[])
        .iter()
        .filter(|&&(_, v)| p.get(v, "chunks").is_none())
        .map(|&(k, _)| p.str(k).unwrap_or("?").to_string())
        .collect()
}

/// The `(relative_path, offset, length)` of every item a DCP `.metadata` lists, keyed
/// by the fully qualified name of the state-dict entry.
pub fn dcp_storage(p: &Pickle) -> Vec<(String, String, u64, u64)> {
    let mut out = Vec::new();
    let Some(storage) = p.get(p.root, "storage_data") else {
        return out;
    };
    for &(k, v) in p.dict_entries(storage).unwrap_or(&[]) {
        let fqn = p
            .get(k, "fqn")
            .and_then(|id| p.str(id))
            .unwrap_or("?")
            .to_string();
        let field = |name: &str| p.get(v, name);
        let rel = field("relative_path").and_then(|id| p.str(id));
        let offset = field("offset").and_then(|id| p.int(id));
        let length = field("length").and_then(|id| p.int(id));
        if let (Some(rel), Some(offset), Some(length)) = (rel, offset, length) {
            out.push((
                fqn,
                rel.to_string(),
                u64::try_from(offset).unwrap_or(u64::MAX),
                u64::try_from(length).unwrap_or(u64::MAX),
            ));
        }
    }
    out
}
