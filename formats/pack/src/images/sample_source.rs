//! [`ImageSource`] as a [`SampleSource`]: listing transforms every sample with an image
//! (in parallel, into the scratch file); the names, heads and encodings it reports are
//! those of the transformed fields; its reader gives them back from the scratch file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;
use shardsmith_manifest::Skipped;
use shardsmith_shard::columns::{ArrayDtype, Encoding};
use shardsmith_shard::content::Validation;
use shardsmith_shard::sample::{HeadError, Loaded, SampleListing, SampleReader, SampleSource};
use shardsmith_shard::{FieldSpec, Result, SampleSpec};

use super::prepare;
use super::source::{Entry, ImageSource, Target};

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

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError> {
        let entry = self.entry(sample);
        let Some(origins) = &entry.fields else {
            return self.inner.head(&entry.original, field, n);
        };
        let i = sample
            .fields
            .iter()
            .position(|f| f.ext == field.ext)
            .ok_or_else(|| HeadError::NoField {
                key: sample.key.clone(),
                field: field.ext.to_string(),
            })?;
        let mut buf = Vec::new();
        let origin = &origins[i];
        self.spill
            .get(origin.offset, origin.len.min(n as u64), &mut buf)
            .map_err(HeadError::Scratch)?;
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
