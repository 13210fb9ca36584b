//! What a torch pickle (`data.pkl`, a DCP `.metadata`, a legacy file) holds, read
//! without executing it: the tensors and the storages they live in, every imported
//! global sorted into what `torch.load(weights_only=True)` accepts, known data classes
//! of training frameworks, and anything else (reported as unsafe), plus the few scalar
//! facts the layout checks need (DeepSpeed partition counts, Megatron parallel sizes).

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use super::pickle::{Id, Node, Pickle};
use super::values::TensorDtype;

/// How far the name walk descends into nested containers.
const MAX_DEPTH: usize = 64;

/// How a pickle global is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Accepted by torch's `weights_only` loader, or inert data classes.
    Safe,
    /// A class of a known training framework: loading needs `weights_only=False`.
    Framework,
    /// Anything else: loading would import and call it.
    Unsafe,
}

/// Judges `module.name`.
pub fn trust(global: &str) -> Trust {
    const SAFE: &[&str] = &[
        "collections.OrderedDict",
        "collections.defaultdict",
        "_codecs.encode",
        "builtins.set",
        "builtins.frozenset",
        "builtins.bytearray",
        "builtins.slice",
        "builtins.complex",
        "argparse.Namespace",
        "pathlib.PosixPath",
        "pathlib.WindowsPath",
        "pathlib.PurePosixPath",
        "numpy.core.multiarray._reconstruct",
        "numpy._core.multiarray._reconstruct",
        "numpy.core.multiarray.scalar",
        "numpy._core.multiarray.scalar",
        "numpy.ndarray",
        "numpy.dtype",
        "torch.Size",
        "torch.device",
        "torch.serialization._get_layout",
        "torch._tensor._rebuild_from_type_v2",
        "torch.nn.parameter.Parameter",
        "torch.storage.UntypedStorage",
        "torch.storage.TypedStorage",
        "torch.storage._load_from_bytes",
    ];
    if SAFE.contains(&global)
        || global.starts_with("torch._utils._rebuild_")
        || global.starts_with("torch.distributed.checkpoint.")
        || global.starts_with("numpy.dtypes.")
    {
        return Trust::Safe;
    }
    if let Some(name) = global.strip_prefix("torch.")
        && !name.contains('.')
        && (name.ends_with("Storage")
            || TensorDtype::from_torch_dtype(name).is_some()
            || matches!(
                name,
                "strided" | "sparse_coo" | "_mkldnn" | "contiguous_format"
            ))
    {
        return Trust::Safe;
    }
    const DANGEROUS: &[&str] = &[
        "os.",
        "posix.",
        "nt.",
        "subprocess.",
        "sys.",
        "builtins.",
        "__builtin__.",
        "runpy.",
        "importlib.",
        "socket.",
        "shutil.",
        "pickle.",
        "marshal.",
        "types.",
        "code.",
        "pty.",
        "webbrowser.",
        "ctypes.",
        "functools.",
        "operator.",
        "io.",
        "codecs.",
    ];
    if DANGEROUS.iter().any(|p| global.starts_with(p)) {
        return Trust::Unsafe;
    }
    const FRAMEWORKS: &[&str] = &[
        "torch.nn.",
        "torch.optim.",
        "torch.amp.",
        "torch.cuda.amp.",
        "deepspeed.",
        "megatron.",
        "transformers.",
        "accelerate.",
        "lightning.",
        "pytorch_lightning.",
        "lightning_fabric.",
        "omegaconf.",
        "apex.",
        "peft.",
        "diffusers.",
        "timm.",
        "enum.",
        "datetime.",
        "decimal.",
        "fractions.",
        "collections.",
    ];
    if FRAMEWORKS.iter().any(|p| global.starts_with(p)) {
        Trust::Framework
    } else {
        Trust::Unsafe
    }
}

/// A storage as the pickle declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// Record key (`0`, `1`, ...): the member `data/<key>`.
    pub key: String,
    /// Element type of the storage (bytes for untyped storages).
    pub dtype: Option<TensorDtype>,
    /// Bytes the storage holds, as declared.
    pub bytes: Option<u64>,
    /// Names of the tensors that live in it.
    pub tensors: Vec<String>,
    /// Where it was saved from (`cpu`, `cuda:0`).
    pub location: String,
    /// An `UntypedStorage`: its element count (in the pickle and in a legacy file) is
    /// in bytes.
    pub untyped: bool,
}

/// A tensor that extends past the end of its storage.
#[derive(Clone, Debug, PartialEq)]
pub struct Overrun {
    /// Tensor name.
    pub tensor: String,
    /// Storage key.
    pub key: String,
    /// Elements the tensor's view needs.
    pub needs: u64,
    /// Elements the storage declares.
    pub has: u64,
}

/// A tensor as its rebuild call describes it.
#[derive(Clone, Debug)]
pub struct View {
    /// Dotted name (`model.layers.0.w`), or `<tensor N>` when unreachable from the root.
    pub name: String,
    /// Element type, when known.
    pub dtype: Option<TensorDtype>,
    /// Shape (dimensions that are not non-negative integers left out).
    pub shape: Vec<u64>,
    /// Record key of its storage (the member `data/<key>`).
    pub storage: String,
    /// First element in the storage, when a non-negative integer.
    pub offset: Option<u64>,
    /// Stride of each dimension in elements, when all are non-negative integers.
    pub stride: Option<Vec<u64>>,
}

/// What a torch pickle holds.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    /// Storages by key.
    pub storages: BTreeMap<String, Storage>,
    /// Number of tensors.
    pub tensors: usize,
    /// Tensor names, in the order found.
    pub names: Vec<String>,
    /// Each tensor as its rebuild call describes it, in the same order.
    pub views: Vec<View>,
    /// Tensors whose view runs past their storage.
    pub overruns: Vec<Overrun>,
    /// Storages referenced with different sizes by different tensors.
    pub conflicts: Vec<String>,
    /// Globals needing `weights_only=False` (framework classes).
    pub framework: Vec<String>,
    /// Globals that would run arbitrary code when loaded.
    pub unsafe_globals: Vec<String>,
    /// Scalar facts for layout checks.
    pub facts: BTreeMap<String, Value>,
    /// Rebuild functions of tensors that are not plain strided views of one storage
    /// (quantized, sparse, nested, subclass wrappers): their values are not in `views`.
    pub other_rebuilds: Vec<String>,
}

/// Reads the tensors, storages and globals of `p`.
pub fn contents(p: &Pickle) -> Contents {
    let mut out = Contents::default();
    for g in &p.globals {
        match trust(g) {
            Trust::Safe => {}
            Trust::Framework => out.framework.push(g.clone()),
            Trust::Unsafe => out.unsafe_globals.push(g.clone()),
        }
    }
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
    let names = tensor_names(p);
    for (id, node) in p.nodes.iter().enumerate() {
        let Node::Call(func, args) = node else {
            continue;
        };
        let Some(func) = p.global_name(*func) else {
            continue;
        };
        let v3 = func == "torch._utils._rebuild_tensor_v3";
        if !(v3
            || func == "torch._utils._rebuild_tensor_v2"
            || func == "torch._utils._rebuild_tensor")
        {
            continue;
        }
        let Some(args) = p.items(*args) else { continue };
        let Some(&Node::PersId(pid)) = args.first().map(|&a| p.node(a)) else {
            continue;
        };
        let Some(pid) = p.items(pid) else { continue };
        if pid.len() < 5 || p.str(pid[0]) != Some("storage") {
            continue;
        }
        let class = p.global_name(pid[1]).unwrap_or_default();
        let class = class.rsplit('.').next().unwrap_or_default();
        let key = p.str(pid[2]).unwrap_or_default().to_string();
        let location = p.str(pid[3]).unwrap_or_default().to_string();
        let numel = p.int(pid[4]).and_then(|n| u64::try_from(n).ok());
        let storage_dtype = TensorDtype::from_torch_storage(class);
        let tensor_dtype = if v3 {
            args.get(6)
                .and_then(|&d| p.global_name(d))
                .and_then(|n| TensorDtype::from_torch_dtype(n.trim_start_matches("torch.")))
        } else {
            storage_dtype
        };
        let untyped = class == "UntypedStorage";
        let bytes = numel.and_then(|n| {
            if untyped {
                Some(n)
            } else {
                storage_dtype.and_then(|d| n.checked_mul(d.size()))
            }
        });
        let name = names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("<tensor {}>", out.tensors));
        out.tensors += 1;
        out.names.push(name.clone());
        out.views.push(View {
            name: name.clone(),
            dtype: tensor_dtype,
            shape: args
                .get(2)
                .and_then(|&s| p.items(s))
                .map(|s| {
                    s.iter()
                        .filter_map(|&x| p.int(x).and_then(|n| u64::try_from(n).ok()))
                        .collect()
                })
                .unwrap_or_default(),
            storage: key.clone(),
            offset: args
                .get(1)
                .and_then(|&o| p.int(o))
                .and_then(|o| u64::try_from(o).ok()),
            stride: args.get(3).and_then(|&s| p.items(s)).and_then(|s| {
                s.iter()
                    .map(|&x| p.int(x).and_then(|n| u64::try_from(n).ok()))
                    .collect()
            }),
        });
        let dtype = if untyped { tensor_dtype } else { storage_dtype };
        let entry = out.storages.entry(key.clone()).or_insert_with(|| Storage {
            key: key.clone(),
            dtype,
            bytes,
            tensors: Vec::new(),
            location,
            untyped,
        });
        if entry.bytes != bytes && !out.conflicts.contains(&key) {
            out.conflicts.push(key.clone());
        }
        entry.tensors.push(name.clone());
        // The view must fit: offset + 1 + Σ(size_i − 1)·stride_i ≤ elements.
        let ints = |id: Option<&Id>| -> Option<Vec<i64>> {
            p.items(*id?)?.iter().map(|&x| p.int(x)).collect()
        };
        let (Some(offset), Some(size), Some(stride)) = (
            args.get(1).and_then(|&o| p.int(o)),
            ints(args.get(2)),
            ints(args.get(3)),
        ) else {
            continue;
        };
        let elem = tensor_dtype.map_or(1, TensorDtype::size);
        let Some(has) = bytes.map(|b| b / elem) else {
            continue;
        };
        if size.contains(&0) || size.len() != stride.len() {
            continue;
        }
        let needs = size
            .iter()
            .zip(&stride)
            .try_fold(offset.checked_add(1), |acc, (&s, &st)| {
                Some(acc.and_then(|a| a.checked_add((s - 1).checked_mul(st)?)))
            })
            .flatten()
            .and_then(|n| u64::try_from(n).ok());
        match needs {
            Some(needs) if needs <= has => {}
            _ => out.overruns.push(Overrun {
                tensor: name,
                key,
                needs: needs.unwrap_or(u64::MAX),
                has,
            }),
        }
    }
    scalar_facts(p, &mut out.facts);
    out
}

/// Dotted names of the tensors reachable from the root (`model.layers.0.w`).
fn tensor_names(p: &Pickle) -> BTreeMap<Id, String> {
    let mut names = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(p.root, String::new(), 0usize)];
    while let Some((id, path, depth)) = stack.pop() {
        if depth > MAX_DEPTH || !seen.insert(id) {
            continue;
        }
        let child = |key: String| {
            if path.is_empty() {
                key
            } else {
                format!("{path}.{key}")
            }
        };
        match p.node(id) {
            Node::Call(func, args) => {
                let func = p.global_name(*func).unwrap_or_default();
                if func.starts_with("torch._utils._rebuild_tensor") {
                    let name = if path.is_empty() {
                        "<root>".to_string()
                    } else {
                        path
                    };
                    names.entry(id).or_insert(name);
                } else if let Some(first) = p.items(*args).and_then(|a| a.first()) {
                    // _rebuild_parameter(tensor, ...) and the like wrap the tensor.
                    stack.push((*first, path, depth + 1));
                }
            }
            Node::Dict(_) | Node::Object { .. } => {
                for &(k, v) in p.dict_entries(id).unwrap_or(&[]) {
                    let key = match p.node(k) {
                        Node::Str(s) => s.clone(),
                        Node::Int(i) => i.to_string(),
                        _ => "?".into(),
                    };
                    stack.push((v, child(key), depth + 1));
                }
                if let Node::Object { args, .. } = p.node(id)
                    && let Some(first) = p.items(*args).and_then(|a| a.first())
                {
                    stack.push((*first, path.clone(), depth + 1));
                }
            }
            Node::List(items) | Node::Tuple(items) => {
                for (i, &item) in items.iter().enumerate() {
                    stack.push((item, child(i.to_string()), depth + 1));
                }
            }
            _ => {}
        }
    }
    names
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_are_judged() {
        assert_eq!(trust("torch._utils._rebuild_tensor_v2"), Trust::Safe);
        assert_eq!(trust("torch.BFloat16Storage"), Trust::Safe);
        assert_eq!(trust("torch.float8_e4m3fn"), Trust::Safe);
        assert_eq!(trust("collections.OrderedDict"), Trust::Safe);
        assert_eq!(
            trust("torch.distributed.checkpoint.metadata.Metadata"),
            Trust::Safe
        );
        assert_eq!(
            trust("transformers.training_args.TrainingArguments"),
            Trust::Framework
        );
        assert_eq!(trust("posix.system"), Trust::Unsafe);
        assert_eq!(trust("builtins.eval"), Trust::Unsafe);
        assert_eq!(trust("evil_module.payload"), Trust::Unsafe);
        assert_eq!(trust("torch.load"), Trust::Unsafe);
        assert_eq!(trust("torch.optim.adamw.AdamW"), Trust::Framework);
    }
}
