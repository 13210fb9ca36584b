//! How each global a pickle imports is judged, against the reader that loads the file:
//! `torch.load(weights_only=True)` (the default since torch 2.6) for torch zip and
//! legacy files, a full unpickler for DCP `.metadata` (DCP reads it with
//! `pickle.load`), the byte items of DCP data files and other pickles.

use crate::values::TensorDtype;

/// How a pickle global is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// In the allowlist of `torch.load(weights_only=True)` (torch 2.15,
    /// `torch/_weights_only_unpickler.py`): loads by default.
    Allowed,
    /// Refused by `weights_only=True`, but a data class that runs no code beyond
    /// building its value (`frozenset`, `defaultdict`, numpy arrays, paths,
    /// `argparse.Namespace`, the DCP metadata classes): a full unpickler loads it.
    Inert,
    /// A class of a known training framework: loading needs that package and
    /// `weights_only=False`.
    Framework,
    /// Anything else: loading would import and call it.
    Unsafe,
}

/// The reader a pickle is judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// `torch.load` with its default `weights_only=True`: torch zip and legacy files.
    WeightsOnly,
    /// A full unpickler (`pickle.load`, `torch.load(weights_only=False)`): DCP
    /// `.metadata`, DCP data files, plain pickles.
    Pickle,
}

/// Modules `weights_only` refuses even when a user allowlists them.
const BLOCKED: &[&str] = &["sys", "os", "posix", "nt"];

/// The fixed names of the `weights_only` allowlist (torch 2.15); the dtype, tensor and
/// storage class families are in [`weights_only_allows`].
const ALLOWED: &[&str] = &[
    "collections.OrderedDict",
    "collections.Counter",
    "torch.nn.parameter.Parameter",
    "torch.serialization._get_layout",
    "torch.Size",
    "torch.Tensor",
    "torch.device",
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.set",
    "builtins.complex",
    "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.per_channel_affine",
    "torch.per_channel_symmetric",
    "torch.per_channel_affine_float_qparams",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_wrapper_subclass",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._tensor._rebuild_from_type_v2",
];

/// Every `torch.<dtype>` of the allowlist.
const DTYPES: &[&str] = &[
    "bcomplex32",
    "bfloat16",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bool",
    "complex128",
    "complex32",
    "complex64",
    "float16",
    "float32",
    "float4_e2m1fn_x2",
    "float64",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
    "int8",
    "int16",
    "int32",
    "int64",
    "qint32",
    "qint8",
    "quint2x4",
    "quint4x2",
    "quint8",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
];

/// Element types of the legacy tensor classes (`torch.FloatTensor`, ...).
const TENSOR_TYPES: &[&str] = &[
    "BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short",
];

/// Element types of the typed storage classes (`torch.FloatStorage`, ...).
const STORAGE_TYPES: &[&str] = &[
    "BFloat16",
    "Bool",
    "Byte",
    "Char",
    "ComplexDouble",
    "ComplexFloat",
    "Double",
    "Float",
    "Half",
    "Int",
    "Long",
    "Short",
];

/// Whether `torch.load(weights_only=True)` of torch 2.15 accepts `global` (after the
/// Python 2 names were mapped, as the pickle reader does).
pub fn weights_only_allows(global: &str) -> bool {
    if ALLOWED.contains(&global) {
        return true;
    }
    let Some(name) = global.strip_prefix("torch.") else {
        return false;
    };
    if DTYPES.contains(&name) {
        return true;
    }
    let (cuda, name) = match name.strip_prefix("cuda.") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    if let Some(t) = name
        .strip_prefix("sparse.")
        .and_then(|n| n.strip_suffix("Tensor"))
    {
        return t != "Bool" && TENSOR_TYPES.contains(&t);
    }
    if let Some(t) = name.strip_suffix("Tensor") {
        return TENSOR_TYPES.contains(&t);
    }
    if let Some(s) = name.strip_suffix("Storage") {
        let quantized = matches!(s, "QInt32" | "QInt8" | "QUInt2x4" | "QUInt4x2" | "QUInt8");
        return STORAGE_TYPES.contains(&s) || (quantized && !cuda);
    }
    false
}

/// Globals `weights_only=True` refuses that run no code of their own (beside the
/// prefixes [`is_inert`] accepts).
const INERT: &[&str] = &[
    "builtins.frozenset",
    "builtins.slice",
    "builtins.range",
    "builtins.int",
    "builtins.float",
    "builtins.str",
    "builtins.bytes",
    "builtins.bool",
    "builtins.list",
    "builtins.dict",
    "builtins.tuple",
    "builtins.object",
    "copyreg._reconstructor",
    "collections.defaultdict",
    "argparse.Namespace",
    "pathlib.Path",
    "pathlib.PosixPath",
    "pathlib.WindowsPath",
    "pathlib.PurePosixPath",
    "pathlib.PureWindowsPath",
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
    "numpy.ndarray",
    "numpy.dtype",
    "torch.storage._load_from_bytes",
];

/// Module prefixes whose globals can run arbitrary code.
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
    "copyreg.",
];

/// Module prefixes of training frameworks: loading needs them, and `weights_only=False`.
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

/// Whether `global` is refused by `weights_only=True` but runs no code of its own:
/// plain containers and values, rebuild functions, DCP metadata classes, torch dtypes,
/// storage classes and layouts.
fn is_inert(global: &str) -> bool {
    if INERT.contains(&global)
        || global.starts_with("torch._utils._rebuild_")
        || global.starts_with("torch.distributed.checkpoint.")
        || global.starts_with("numpy.dtypes.")
    {
        return true;
    }
    global.strip_prefix("torch.").is_some_and(|name| {
        !name.contains('.')
            && (name.ends_with("Storage")
                || TensorDtype::from_torch_dtype(name).is_some()
                || matches!(
                    name,
                    "strided"
                        | "sparse_coo"
                        | "_mkldnn"
                        | "contiguous_format"
                        | "channels_last"
                        | "channels_last_3d"
                        | "preserve_format"
                ))
    })
}

/// Judges `module.name`.
pub fn trust(global: &str) -> Trust {
    let module = global.rsplit_once('.').map_or("", |(m, _)| m);
    if BLOCKED.contains(&module) {
        return Trust::Unsafe;
    }
    if weights_only_allows(global) {
        return Trust::Allowed;
    }
    if is_inert(global) {
        return Trust::Inert;
    }
    if DANGEROUS.iter().any(|p| global.starts_with(p)) {
        return Trust::Unsafe;
    }
    if FRAMEWORKS.iter().any(|p| global.starts_with(p)) {
        Trust::Framework
    } else {
        Trust::Unsafe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globals_are_judged_as_weights_only_judges_them() {
        for allowed in [
            "torch._utils._rebuild_tensor_v2",
            "torch.BFloat16Storage",
            "torch.cuda.HalfStorage",
            "torch.QInt8Storage",
            "torch.float8_e4m3fn",
            "torch.uint3",
            "torch.sparse.FloatTensor",
            "torch.cuda.sparse.LongTensor",
            "collections.OrderedDict",
            "collections.Counter",
            "builtins.set",
            "builtins.complex",
            "_codecs.encode",
            "torch.device",
        ] {
            assert_eq!(trust(allowed), Trust::Allowed, "{allowed}");
        }
        assert!(!weights_only_allows("torch.cuda.QInt8Storage"));
        assert!(!weights_only_allows("torch.sparse.BoolTensor"));
        for refused in [
            "torch.strided",
            "builtins.frozenset",
            "collections.defaultdict",
            "argparse.Namespace",
            "torch.distributed.checkpoint.metadata.Metadata",
            "torch._utils._rebuild_nested_tensor",
        ] {
            assert_eq!(trust(refused), Trust::Inert, "{refused}");
        }
        assert_eq!(
            trust("transformers.training_args.TrainingArguments"),
            Trust::Framework
        );
        assert_eq!(trust("torch.optim.adamw.AdamW"), Trust::Framework);
        assert_eq!(trust("collections.deque"), Trust::Framework);
        for unsafe_ in [
            "posix.system",
            "os.OrderedDict",
            "builtins.eval",
            "builtins.getattr",
            "copyreg.__newobj__",
            "evil_module.payload",
            "torch.load",
        ] {
            assert_eq!(trust(unsafe_), Trust::Unsafe, "{unsafe_}");
        }
    }
}
