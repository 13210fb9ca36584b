//! The image source's state: its settings, the output target, and what listing learnt
//! about each sample (where its transformed fields are in the scratch file). Shared by
//! the listing and reading in `mod.rs` and the per-sample work in `prepare.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Value, json};
use shardsmith_image::ImageOptions;
use shardsmith_shard::SampleSpec;
use shardsmith_shard::content::Validation;
use shardsmith_shard::sample::SampleSource;

use super::spill::Spill;

/// Where one output field's bytes are.
pub(crate) struct Origin {
    /// In the scratch file.
    pub offset: u64,
    /// Length.
    pub len: u64,
    /// The input field it comes from (index into the listed sample's fields).
    pub from: usize,
}

/// The image settings of a `pack` run.
#[derive(Clone, Debug)]
pub struct ImageSettings {
    /// What to do with each image.
    pub options: ImageOptions,
    /// Fields that hold images; `None`: every field whose extension names an image
    /// format (jpg, jpeg, png, webp, gif, bmp, tif, tiff).
    pub fields: Option<BTreeSet<String>>,
    /// Where the transformed samples wait for their shard.
    pub scratch: PathBuf,
}

impl ImageSettings {
    /// The settings that decide the output bytes, for the manifest.
    pub fn to_json(&self) -> Value {
        let mut value = self.options.to_json();
        value["fields"] = match &self.fields {
            Some(f) => json!(f),
            None => Value::Null,
        };
        value
    }

    /// True when `ext` names an image field.
    pub(crate) fn is_image(&self, ext: &str) -> bool {
        match &self.fields {
            Some(fields) => fields.contains(ext),
            None => shardsmith_image::Kind::from_ext(ext).is_some(),
        }
    }
}

/// An array's height, width and channels.
pub(super) type Shape = (u32, u32, u32);

/// The output format, for where metadata and arrays go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Metadata merged into each sample's JSON; arrays as `.npy` files.
    WebDataset,
    /// Metadata as int32 and str columns; arrays as `ndarray:uint8[:H,W,C]`.
    Mds,
    /// Metadata as integer and string columns; arrays as `.npy` bytes.
    Parquet,
}

impl Target {
    /// The target for a format name.
    pub fn for_format(name: &str) -> Self {
        match name {
            "webdataset" => Target::WebDataset,
            "mds" => Target::Mds,
            _ => Target::Parquet,
        }
    }
}

/// One listed sample: where each of its output fields comes from.
pub(crate) struct Entry {
    /// The sample as the inner source lists it.
    pub(super) original: SampleSpec,
    /// Per output field (in output order), or `None` when read from the source as is.
    pub(super) fields: Option<Vec<Origin>>,
}

/// A source whose images come out transformed.
pub struct ImageSource<'a> {
    pub(super) inner: &'a dyn SampleSource,
    pub(super) observer: &'a dyn crate::PackObserver,
    pub(super) settings: &'a ImageSettings,
    pub(super) target: Target,
    pub(super) validation: Validation,
    pub(super) fields: Option<&'a BTreeSet<String>>,
    pub(super) spill: Spill,
    pub(super) entries: Mutex<Vec<Entry>>,
    /// The entries, frozen once listed (readers share them).
    pub(super) frozen: std::sync::OnceLock<Vec<Entry>>,
    pub(super) warnings: Mutex<Vec<String>>,
    pub(super) tensor_shapes: Mutex<BTreeMap<String, BTreeSet<Shape>>>,
    /// Metadata fields added (tabular outputs).
    pub(super) columns: Mutex<BTreeSet<String>>,
    /// Names of the fields that hold encoded images.
    pub(super) images: Mutex<BTreeSet<String>>,
}

impl<'a> ImageSource<'a> {
    /// Wraps `inner`; `fields` is `--fields` (applied to the input's names, before images
    /// are renamed).
    pub fn new(
        inner: &'a dyn SampleSource,
        observer: &'a dyn crate::PackObserver,
        settings: &'a ImageSettings,
        target: Target,
        validation: Validation,
        fields: Option<&'a BTreeSet<String>>,
    ) -> std::io::Result<Self> {
        let spill = Spill::new(&settings.scratch).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot create the scratch file for transformed images in `{}`: {e}",
                    settings.scratch.display()
                ),
            )
        })?;
        Ok(Self {
            inner,
            observer,
            settings,
            target,
            validation,
            fields,
            spill,
            entries: Mutex::new(Vec::new()),
            frozen: std::sync::OnceLock::new(),
            warnings: Mutex::new(Vec::new()),
            tensor_shapes: Mutex::new(BTreeMap::new()),
            columns: Mutex::new(BTreeSet::new()),
            images: Mutex::new(BTreeSet::new()),
        })
    }

    /// Things worth telling the user (images that were not what their name says).
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().expect("not poisoned").clone()
    }

    /// The sample as the inner source lists it (for the manifest's input summary).
    pub fn original(&self, sample: &SampleSpec) -> &SampleSpec {
        &self.entries()[sample.origin as usize].original
    }

    /// The inner source.
    pub fn inner(&self) -> &dyn SampleSource {
        self.inner
    }

    pub(super) fn entries(&self) -> &[Entry] {
        self.frozen
            .get_or_init(|| std::mem::take(&mut *self.entries.lock().expect("not poisoned")))
    }

    /// The entry and origins of an output sample.
    pub(super) fn entry(&self, sample: &SampleSpec) -> &Entry {
        &self.entries()[sample.origin as usize]
    }
}
