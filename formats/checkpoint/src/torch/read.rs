//! Reading a torch pickle's [`Contents`]: the globals judged, the tensors reached
//! through the value graph, each view checked against its storage, and the scalar facts.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::contents::{Contents, Fault, Storage, View};
use super::graph;
use super::trust::{Trust, trust};
use crate::pickle::{Id, Node, Pickle};
use crate::values::TensorDtype;

/// Reads the tensors, storages, values and globals of `p`.
pub fn contents(p: &Pickle) -> Contents {
    let mut out = Contents::default();
    for g in &p.globals {
        match trust(g) {
            Trust::Allowed => {}
            Trust::Inert => out.inert.push(g.clone()),
            Trust::Framework => out.framework.push(g.clone()),
            Trust::Unsafe => out.unsafe_globals.push(g.clone()),
        }
    }
    out.weights_only_refuses = p.weights_only_refuses;
    const PLAIN: [&str; 5] = [
        "torch._utils._rebuild_tensor",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_tensor_v3",
        "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state",
    ];
    out.other_rebuilds = p
        .globals
        .iter()
        .filter(|g| g.starts_with("torch._utils._rebuild_") && !PLAIN.contains(&g.as_str()))
        .cloned()
        .collect();
    let reached = graph::reach(p);
    out.names_truncated = reached.truncated;
    out.entries = reached.entries;
    out.other_tensors = reached.others;
    // Tensors in the order reached, then those no path reaches, in pickle order.
    let mut order: Vec<(Id, Vec<String>)> = reached.tensors;
    let known: std::collections::HashSet<Id> = order.iter().map(|(id, _)| *id).collect();
    for id in 0..p.nodes.len() {
        if !known.contains(&id) && graph::tensor_call(p, id).is_some() {
            order.push((id, Vec::new()));
        }
    }
    for (id, mut names) in order {
        let Some(view) = view(p, id, &mut out.storages, &mut out.conflicts) else {
            continue;
        };
        if names.is_empty() {
            names.push(format!("<tensor {}>", out.tensors));
        }
        out.tensors += 1;
        out.names.extend(names.iter().cloned());
        let name = names.remove(0);
        if let Some(s) = out.storages.get_mut(&view.storage) {
            s.tensors.push(name.clone());
        }
        out.views.push(View {
            name,
            aliases: names,
            ..view
        });
    }
    out.names
        .extend(out.other_tensors.iter().map(|(name, _)| name.clone()));
    // Storages saved on their own (`torch.save(t.untyped_storage())`): known records.
    for node in &p.nodes {
        if let Node::PersId(pid) = node
            && let Some(s) = storage(p, *pid, None)
        {
            out.storages.entry(s.key.clone()).or_insert(s);
        }
    }
    scalar_facts(p, &mut out.facts);
    out
}

/// The storage a persistent id `('storage', class, key, location, numel)` names;
/// `tensor_dtype` is the element type of an untyped storage's tensor.
fn storage(p: &Pickle, pid: Id, tensor_dtype: Option<TensorDtype>) -> Option<Storage> {
    let pid = p.items(pid)?;
    if pid.len() < 5 || p.str(pid[0]) != Some("storage") {
        return None;
    }
    let class = p.global_name(pid[1]).unwrap_or_default();
    let class = class.rsplit('.').next().unwrap_or_default();
    let numel = p.int(pid[4]).and_then(|n| u64::try_from(n).ok());
    let untyped = class == "UntypedStorage";
    let storage_dtype = TensorDtype::from_torch_storage(class);
    let bytes = numel.and_then(|n| match untyped {
        true => Some(n),
        false => storage_dtype.and_then(|d| n.checked_mul(d.size())),
    });
    Some(Storage {
        key: p.str(pid[2]).unwrap_or_default().to_string(),
        dtype: if untyped { tensor_dtype } else { storage_dtype },
        bytes,
        tensors: Vec::new(),
        location: p.str(pid[3]).unwrap_or_default().to_string(),
        untyped,
        numel,
    })
}

/// The view of the tensor whose rebuild call is `id` (its storage recorded in
/// `storages`); `None` when the call names no storage.
fn view(
    p: &Pickle,
    id: Id,
    storages: &mut BTreeMap<String, Storage>,
    conflicts: &mut Vec<String>,
) -> Option<View> {
    let (func, args) = graph::tensor_call(p, id)?;
    let Node::PersId(pid) = p.node(*args.first()?) else {
        return None;
    };
    let pid_items = p.items(*pid)?;
    let v3 = func == "torch._utils._rebuild_tensor_v3";
    let class = pid_items
        .get(1)
        .and_then(|&c| p.global_name(c))
        .unwrap_or_default();
    let storage_dtype =
        TensorDtype::from_torch_storage(class.rsplit('.').next().unwrap_or_default());
    let v3_dtype = args.get(6).and_then(|&d| p.global_name(d));
    let tensor_dtype = match v3 {
        true => v3_dtype
            .as_deref()
            .and_then(|n| TensorDtype::from_torch_dtype(n.trim_start_matches("torch."))),
        false => storage_dtype,
    };
    let s = storage(p, *pid, tensor_dtype)?;
    let key = s.key.clone();
    let entry = storages.entry(key.clone()).or_insert_with(|| s.clone());
    if entry.bytes != s.bytes && !conflicts.contains(&key) {
        conflicts.push(key.clone());
    }
    let has = s
        .bytes
        .map(|b| b / tensor_dtype.map_or(1, TensorDtype::size));
    let ints = |at: usize| -> Option<Vec<i64>> {
        p.items(*args.get(at)?)?.iter().map(|&x| p.int(x)).collect()
    };
    let unsigned =
        |v: &[i64]| -> Option<Vec<u64>> { v.iter().map(|&x| u64::try_from(x).ok()).collect() };
    let offset = args.get(1).and_then(|&o| p.int(o));
    let (size, stride) = (ints(2), ints(3));
    let mut view = View {
        dtype: tensor_dtype,
        shape: size.as_deref().and_then(unsigned).unwrap_or_default(),
        storage: key,
        offset: offset.and_then(|o| u64::try_from(o).ok()),
        stride: stride.as_deref().and_then(unsigned),
        ..View::default()
    };
    view.fault = if tensor_dtype.is_none() {
        Some(Fault::UnknownDtype(match v3 {
            true => format!("`{}`", v3_dtype.unwrap_or_else(|| "?".into())),
            false => format!("of storage class `{class}`"),
        }))
    } else {
        geometry(offset, size.as_deref(), stride.as_deref(), has)
    };
    Some(view)
}

/// Whether `offset`, `size` and `stride` describe a view torch builds inside a storage
/// of `has` elements: offset + 1 + Σ(size_i − 1)·stride_i ≤ has, unless it has no
/// element.
fn geometry(
    offset: Option<i64>,
    size: Option<&[i64]>,
    stride: Option<&[i64]>,
    has: Option<u64>,
) -> Option<Fault> {
    let bad = |why: &str| Some(Fault::Geometry(why.to_string()));
    let Some(offset) = offset.filter(|&o| o >= 0) else {
        return bad("its storage offset is not a non-negative integer");
    };
    let Some(size) = size.filter(|s| s.iter().all(|&d| d >= 0)) else {
        return bad("its shape is not a list of non-negative integers");
    };
    let Some(stride) = stride.filter(|s| s.iter().all(|&d| d >= 0)) else {
        return bad("its strides are not non-negative integers");
    };
    if size.len() != stride.len() {
        return bad("its shape and strides differ in length");
    }
    let has = has?;
    if size.contains(&0) {
        return None;
    }
    let needs = size
        .iter()
        .zip(stride)
        .try_fold(offset.checked_add(1), |acc, (&s, &st)| {
            Some(acc.and_then(|a| a.checked_add((s - 1).checked_mul(st)?)))
        })
        .flatten()
        .and_then(|n| u64::try_from(n).ok());
    match needs {
        Some(needs) if needs <= has => None,
        _ => Some(Fault::Overrun {
            needs: needs.unwrap_or(u64::MAX),
            has,
        }),
    }
}

fn scalar_facts(p: &Pickle, facts: &mut BTreeMap<String, Value>) {
    let int = |path: &[&str]| p.lookup(path).and_then(|id| p.int(id));
    if let Some(id) = p.lookup(&["optimizer_state_dict", "partition_count"]) {
        let count = p
            .int(id)
            .or_else(|| p.items(id)?.iter().filter_map(|&x| p.int(x)).max());
        if let Some(count) = count {
            facts.insert("deepspeed.partition_count".into(), json!(count));
        }
    }
    for (key, path) in [
        ("deepspeed.mp_world_size", &["mp_world_size"][..]),
        ("deepspeed.dp_world_size", &["dp_world_size"][..]),
        ("megatron.iteration", &["iteration"][..]),
        ("megatron.tp", &["args", "tensor_model_parallel_size"][..]),
        ("megatron.pp", &["args", "pipeline_model_parallel_size"][..]),
    ] {
        if let Some(v) = int(path) {
            facts.insert(key.into(), json!(v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_are_checked_against_their_storage() {
        assert_eq!(
            geometry(Some(0), Some(&[3, 4]), Some(&[4, 1]), Some(12)),
            None
        );
        assert_eq!(
            geometry(Some(1), Some(&[3, 4]), Some(&[4, 1]), Some(12)),
            Some(Fault::Overrun { needs: 13, has: 12 })
        );
        // No element: no storage needed.
        assert_eq!(
            geometry(Some(5), Some(&[0, 4]), Some(&[4, 1]), Some(0)),
            None
        );
        assert!(matches!(
            geometry(Some(0), Some(&[3]), Some(&[1, 1]), Some(12)),
            Some(Fault::Geometry(_))
        ));
        assert!(matches!(
            geometry(Some(-1), Some(&[3]), Some(&[1]), Some(12)),
            Some(Fault::Geometry(_))
        ));
    }
}
