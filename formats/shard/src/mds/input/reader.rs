//! Reading the samples of an MDS dataset: [`SampleSource`] for [`MdsDataset`] and its
//! [`SampleReader`], which reads records through a window of the shard it is in.

use std::collections::BTreeMap;
use std::sync::Arc;

use shardsmith_manifest::Skipped;
use shardsmith_store::RangeRead;

use super::dataset::MdsDataset;
use super::problem::Problem;
use super::shard::Window;
use super::shard_error::{RecordError, ShardError};
use super::{index, shard};
use crate::columns::Encoding;
use crate::content::Validation;
use crate::sample::{
    FieldSpec, HeadError, Loaded, SampleListing, SampleReader, SampleSource, SampleSpec,
};
use crate::{Error, Result};

impl SampleSource for MdsDataset {
    fn describe(&self) -> String {
        self.root.clone()
    }

    fn samples(&self) -> Result<SampleListing> {
        let mut listing = SampleListing::default();
        let mut window = Window::default();
        for i in 0..self.shards.len() {
            self.list_shard(i, &mut listing, &mut window)?;
        }
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let i = self.shard_of(sample.origin);
        let shard = &self.shards[i];
        let column = shard
            .columns
            .columns
            .iter()
            .find(|c| c.field == field.ext)
            .map_or(&*field.ext, |c| c.name.as_str());
        format!(
            "{}#sample={}:{column}",
            self.shard_rel(i),
            sample.origin - shard.first
        )
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError> {
        let mut reader = Reader::new(self, std::slice::from_ref(sample));
        let mut buf = Vec::new();
        let ranges = match reader.load(0, &mut buf)? {
            Ok(Loaded::Memory(ranges)) => ranges,
            Ok(Loaded::Streams(_)) => unreachable!("MDS fields are read into memory"),
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
        index::suggested(&self.shards)
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        Some(self.shard_rel(self.shard_of(sample.origin)).to_string())
    }

    fn shuffle_refusal(&self) -> Option<String> {
        (self.scratch.is_none() && self.shards.iter().any(|s| s.zip.is_some())).then(|| {
            "compressed MDS shards are decompressed whole to be read; shuffling them needs a scratch directory".into()
        })
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        _validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        Ok(Box::new(Reader::new(self, samples)))
    }
}

/// Reads samples of one output shard, keeping the last input shard open.
pub(super) struct Reader<'a> {
    dataset: &'a MdsDataset,
    samples: &'a [SampleSpec],
    current: Option<(usize, Arc<dyn RangeRead>)>,
    window: Window,
    /// End of the last record read, to read ahead only when reads are sequential.
    last_end: u64,
}

impl<'a> Reader<'a> {
    fn new(dataset: &'a MdsDataset, samples: &'a [SampleSpec]) -> Self {
        Self {
            dataset,
            samples,
            current: None,
            window: Window::default(),
            last_end: u64::MAX,
        }
    }
}

impl SampleReader for Reader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let dataset = self.dataset;
        let sample = &self.samples[index];
        let i = dataset.shard_of(sample.origin);
        let data = match &self.current {
            Some((open, data)) if *open == i => data.clone(),
            _ => {
                let data = dataset.data(i)?;
                self.current = Some((i, data.clone()));
                self.window.reset();
                self.last_end = u64::MAX;
                data
            }
        };
        let shard = &dataset.shards[i];
        let local = sample.origin - shard.first;
        let (start, end) = shard::record_bounds(&*data, local).map_err(|e| dataset.bad(i, e))?;
        let at = |error: RecordError| {
            let sample = ShardError::Sample {
                local,
                start,
                end,
                error,
            };
            dataset.bad(i, sample)
        };
        let record = self
            .window
            .read(&*data, start, end, start == self.last_end)
            .map_err(|e| at(RecordError::Unreadable(e)))?;
        self.last_end = end;
        let set = &shard.columns;
        let values = shard::split(set, record).map_err(at)?;
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for field in &sample.fields {
            let c = set
                .fields
                .iter()
                .copied()
                .find(|&c| set.columns[c].field == field.ext)
                .ok_or_else(|| at(RecordError::NoColumn(field.ext.to_string())))?;
            let column = &set.columns[c];
            let value = match column.kind.convert(values[c]) {
                Ok(value) => value,
                Err(Problem::Corrupt(why)) => {
                    return Err(at(RecordError::Corrupt {
                        column: column.name.clone(),
                        why,
                    }));
                }
                Err(Problem::Unsupported(why)) => {
                    return Ok(Err(vec![Skipped {
                        path: dataset.field_path(sample, field),
                        reason: why,
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
