//! Images transformed while packing (`--image-size`, `--image-format`, ...): a
//! [`SampleSource`] over another one whose image fields come out decoded, resized and
//! re-encoded ([`shardsmith_image`]), with their sizes in the sample's metadata.
//!
//! The plan needs every field's size before any shard is written, and a resized image's
//! size is known only once it is encoded. So listing transforms every sample that has an
//! image, in parallel, and keeps the results in a scratch file ([`spill`]); the plan is
//! made from their exact sizes and the shards are written from the scratch file. Each
//! image is decoded once; memory holds one sample per worker; the scratch file holds
//! about the output's size and is removed when the run ends. Samples without an image
//! are read from the source as usual.

mod meta;
mod prepare;
mod spill;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;

use rayon::prelude::*;
use serde_json::{Value, json};
use shardsmith_image::ImageOptions;
use shardsmith_manifest::Skipped;
use shardsmith_shard::columns::{ArrayDtype, Encoding};
use shardsmith_shard::content::Validation;
use shardsmith_shard::sample::{Loaded, SampleListing, SampleReader, SampleSource};
use shardsmith_shard::{FieldSpec, Result, SampleSpec};

use self::prepare::Origin;
use self::spill::Spill;

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
type Shape = (u32, u32, u32);

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
    original: SampleSpec,
    /// Per output field (in output order), or `None` when read from the source as is.
    fields: Option<Vec<Origin>>,
}

/// A source whose images come out transformed.
pub struct ImageSource<'a> {
    inner: &'a dyn SampleSource,
    observer: &'a dyn crate::PackObserver,
    settings: &'a ImageSettings,
    target: Target,
    validation: Validation,
    fields: Option<&'a BTreeSet<String>>,
    spill: Spill,
    entries: Mutex<Vec<Entry>>,
    /// The entries, frozen once listed (readers share them).
    frozen: std::sync::OnceLock<Vec<Entry>>,
    warnings: Mutex<Vec<String>>,
    tensor_shapes: Mutex<BTreeMap<String, BTreeSet<Shape>>>,
    /// Metadata fields added (tabular outputs).
    columns: Mutex<BTreeSet<String>>,
    /// Names of the fields that hold encoded images.
    images: Mutex<BTreeSet<String>>,
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

    fn entries(&self) -> &[Entry] {
        self.frozen
            .get_or_init(|| std::mem::take(&mut *self.entries.lock().expect("not poisoned")))
    }

    /// The entry and origins of an output sample.
    fn entry(&self, sample: &SampleSpec) -> &Entry {
        &self.entries()[sample.origin as usize]
    }
}

impl SampleSource for ImageSource<'_> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = self.inner.samples()?;
        if let Some(fields) = self.fields {
            for sample in &mut listing.samples {
                sample.fields.retain(|f| fields.contains(&*f.ext));
            }
            listing.samples.retain(|s| !s.fields.is_empty());
        }
        // Runs of samples small enough to balance the cores, each read by one reader.
        self.observer.transforming(listing.samples.len() as u64);
        let outcomes: Vec<prepare::Outcome> = listing
            .samples
            .par_chunks(16)
            .flat_map_iter(|run| {
                let done = prepare::prepare_run(self, run);
                self.observer.transformed(run.len() as u64);
                done
            })
            .collect();
        let mut mislabelled = Vec::new();
        let mut entries = Vec::with_capacity(outcomes.len());
        let mut samples = Vec::with_capacity(outcomes.len());
        let mut skipped = listing.skipped;
        for (original, outcome) in listing.samples.into_iter().zip(outcomes) {
            match outcome? {
                Err(skips) => skipped.extend(skips),
                Ok(prepared) => {
                    mislabelled.extend(prepared.mislabelled);
                    let mut spec = prepared.spec.unwrap_or_else(|| original.clone());
                    spec.origin = entries.len() as u64;
                    samples.push(spec);
                    entries.push(Entry {
                        original,
                        fields: prepared.origins,
                    });
                }
            }
        }
        *self.entries.lock().expect("not poisoned") = entries;
        if let Some(first) = mislabelled.first() {
            self.warnings.lock().expect("not poisoned").push(format!(
                "{} image(s) are not the format their name says and were decoded as what they are (first: {first})",
                mislabelled.len()
            ));
        }
        Ok(SampleListing { samples, skipped })
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let entry = self.entry(sample);
        let original = &entry.original;
        let index = match &entry.fields {
            None => original.fields.iter().position(|f| f.ext == field.ext),
            Some(origins) => sample
                .fields
                .iter()
                .position(|f| f.ext == field.ext)
                .map(|i| origins[i].from),
        };
        match index {
            Some(i) => self.inner.field_path(original, &original.fields[i]),
            None => format!("{} ({})", original.key, field.ext),
        }
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, String> {
        let entry = self.entry(sample);
        let Some(origins) = &entry.fields else {
            return self.inner.head(&entry.original, field, n);
        };
        let i = sample
            .fields
            .iter()
            .position(|f| f.ext == field.ext)
            .ok_or_else(|| format!("sample `{}` has no field `{}`", sample.key, field.ext))?;
        let mut buf = Vec::new();
        let origin = &origins[i];
        self.spill
            .get(origin.offset, origin.len.min(n as u64), &mut buf)
            .map_err(|e| format!("cannot be read back from the scratch file: {e}"))?;
        Ok(buf)
    }

    fn suggested_encodings(&self) -> BTreeMap<String, Encoding> {
        let mut suggested = self.inner.suggested_encodings();
        if self.target != Target::WebDataset {
            for name in self.columns.lock().expect("not poisoned").iter() {
                let encoding = if name.ends_with("source_format") {
                    Encoding::Str
                } else {
                    Encoding::Scalar(ArrayDtype::I32)
                };
                suggested.insert(name.clone(), encoding);
            }
        }
        if self.target == Target::Mds {
            // Known to decode: streaming's readers get PIL images, not bytes.
            for name in self.images.lock().expect("not poisoned").iter() {
                match name.rsplit('.').next() {
                    Some("jpg") => suggested.insert(name.clone(), Encoding::Jpeg),
                    Some("png") => suggested.insert(name.clone(), Encoding::Png),
                    _ => None,
                };
            }
        }
        for (field, shapes) in self.tensor_shapes.lock().expect("not poisoned").iter() {
            let encoding = match (self.target, shapes.len()) {
                // WebDataset stores the .npy file; so does Parquet when shapes differ
                // (its binary column then carries dtype and shape in each value's
                // header). One shape: MDS `ndarray:uint8:H,W,C`, Parquet fixed-size
                // binary of the raw pixels with dtype and shape in the field metadata.
                (Target::WebDataset, _) | (Target::Parquet, 0 | 2..) => Encoding::Bytes,
                (Target::Mds | Target::Parquet, 1) => {
                    let &(h, w, c) = shapes.first().expect("one shape");
                    Encoding::NdArray {
                        dtype: Some(ArrayDtype::U8),
                        shape: Some(vec![u64::from(h), u64::from(w), u64::from(c)]),
                    }
                }
                (Target::Mds, _) => Encoding::NdArray {
                    dtype: Some(ArrayDtype::U8),
                    shape: None,
                },
            };
            suggested.insert(field.clone(), encoding);
        }
        suggested
    }

    fn shuffle_refusal(&self) -> Option<String> {
        self.inner.shuffle_refusal()
    }

    fn reader<'b>(
        &'b self,
        samples: &'b [SampleSpec],
        validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'b>> {
        Ok(Box::new(Reader {
            source: self,
            samples,
            validation,
        }))
    }
}

/// Reads samples back: transformed ones from the scratch file, others from the source.
struct Reader<'a> {
    source: &'a ImageSource<'a>,
    samples: &'a [SampleSpec],
    validation: Validation,
}

impl SampleReader for Reader<'_> {
    fn load(
        &mut self,
        index: usize,
        buf: &mut Vec<u8>,
    ) -> Result<std::result::Result<Loaded, Vec<Skipped>>> {
        let sample = &self.samples[index];
        let entry = self.source.entry(sample);
        let Some(origins) = &entry.fields else {
            let one = std::slice::from_ref(&entry.original);
            return self.source.inner.reader(one, self.validation)?.load(0, buf);
        };
        buf.clear();
        let mut ranges = Vec::with_capacity(origins.len());
        for origin in origins {
            let start = buf.len();
            self.source
                .spill
                .get(origin.offset, origin.len, buf)
                .map_err(|e| shardsmith_shard::Error::Io {
                    op: "reading back a transformed sample from the scratch file",
                    path: PathBuf::from(self.source.spill.dir()),
                    source: e,
                })?;
            ranges.push((start, buf.len()));
        }
        Ok(Ok(Loaded::Memory(ranges)))
    }
}
