//! Reading the samples of a LitData dataset: [`SampleSource`] for [`LitdataDataset`] and
//! its [`SampleReader`], which keeps the chunk it reads from in memory.

use std::collections::BTreeMap;

use shardsmith_manifest::Skipped;

use super::dataset::{Items, LitdataDataset};
use crate::columns::Encoding;
use crate::content::Validation;
use crate::sample::{
    FieldSpec, HeadError, Loaded, SampleListing, SampleReader, SampleSource, SampleSpec,
};
use crate::{Error, Result};

impl SampleSource for LitdataDataset {
    fn describe(&self) -> String {
        self.root.clone()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = SampleListing::default();
        for i in 0..self.chunks.len() {
            self.list_chunk(i, &mut listing)?;
        }
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let chunk = &self.chunks[self.chunk_of(sample.origin)];
        format!(
            "{}#item={}:{}",
            chunk.rel,
            sample.origin - chunk.first,
            field.ext
        )
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError> {
        let mut reader = Reader {
            dataset: self,
            samples: std::slice::from_ref(sample),
            current: None,
        };
        let mut buf = Vec::new();
        let ranges = match reader.load(0, &mut buf)? {
            Ok(Loaded::Memory(ranges)) => ranges,
            Ok(Loaded::Streams(_)) => unreachable!("LitData fields are read into memory"),
            Err(skips) => {
                return Err(HeadError::LeftOut(
                    skips.first().map_or_else(String::new, |s| s.reason.clone()),
                ));
            }
        };
        let position = sample
            .fields
            .iter()
            .position(|f| f.ext == field.ext)
            .ok_or_else(|| HeadError::NoField {
                key: sample.key.clone(),
                field: field.ext.to_string(),
            })?;
        let (start, end) = ranges[position];
        Ok(buf[start..end.min(start + n)].to_vec())
    }

    fn suggested_encodings(&self) -> BTreeMap<String, Encoding> {
        self.leaves
            .iter()
            .enumerate()
            .filter(|(l, _)| Some(*l) != self.key)
            .map(|(_, leaf)| (leaf.field.clone(), leaf.kind.suggested()))
            .collect()
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        Some(self.chunks[self.chunk_of(sample.origin)].rel.clone())
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        _validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        Ok(Box::new(Reader {
            dataset: self,
            samples,
            current: None,
        }))
    }
}

/// Reads the samples of one output shard, keeping the last chunk read.
struct Reader<'a> {
    dataset: &'a LitdataDataset,
    samples: &'a [SampleSpec],
    current: Option<(usize, Items)>,
}

impl SampleReader for Reader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let dataset = self.dataset;
        let sample = &self.samples[index];
        let i = dataset.chunk_of(sample.origin);
        if self.current.as_ref().is_none_or(|(open, ..)| *open != i) {
            self.current = Some((i, dataset.load_chunk(i)?));
        }
        let (_, items) = self.current.as_ref().expect("loaded above");
        let local = sample.origin - dataset.chunks[i].first;
        let values = dataset.item(i, items, local)?;
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for field in &sample.fields {
            let Some(l) = (0..dataset.leaves.len())
                .find(|&l| Some(l) != dataset.key && dataset.leaves[l].field == *field.ext)
            else {
                return Err(dataset.bad(i, format!("has no leaf `{}`", field.ext)));
            };
            let Some(stored) = values[l].as_deref() else {
                return Err(dataset.bad(
                    i,
                    format!("item {local} has no leaf `{}` any more", field.ext),
                ));
            };
            let value = match dataset.convert(i, local, &dataset.leaves[l], stored)? {
                Ok(value) => value,
                Err(reason) => {
                    return Ok(Err(vec![Skipped {
                        path: dataset.field_path(sample, field),
                        reason,
                    }]));
                }
            };
            if value.len() as u64 != field.size {
                return Err(Error::InputChanged {
                    path: dataset.field_path(sample, field),
                    listed: field.size,
                    read: value.len() as u64,
                });
            }
            let from = buf.len();
            buf.extend_from_slice(&value);
            ranges.push((from, buf.len()));
        }
        Ok(Ok(Loaded::Memory(ranges)))
    }
}
