//! Samples from a tree of raw files: listed by an [`InputSource`], grouped by name
//! ([`super::group`]), read file by file.

use std::io::Read;

use shardsmith_manifest::Skipped;

use super::group;
use shardsmith_shard::content::{self, Validation};
use shardsmith_shard::sample::{
    HeadError, Loaded, SampleListing, SampleReader, SampleSource, Tracked,
};
use shardsmith_shard::{Error, FieldSpec, Result, SampleSpec};
use shardsmith_store::{InputSource, ListedFile, Prefetched, ReadError};

/// Samples up to this size are read into memory and checked before writing; larger ones
/// are checked in a streaming pre-read and then streamed into the shard.
pub(crate) const MEMORY_LIMIT: u64 = 16 << 20;

/// A tree of raw files as a sample source.
pub struct FileTree<'a> {
    input: &'a dyn InputSource,
}

impl<'a> FileTree<'a> {
    /// Samples grouped from the files `input` lists.
    pub fn new(input: &'a dyn InputSource) -> Self {
        Self { input }
    }
}

impl SampleSource for FileTree<'_> {
    fn describe(&self) -> String {
        self.input.describe()
    }

    fn samples(&self) -> Result<SampleListing> {
        let listing = self.input.list()?;
        let grouped = group::group(listing.files);
        let mut skipped = listing.skipped;
        skipped.extend(grouped.skipped);
        Ok(SampleListing {
            samples: grouped.samples,
            skipped,
        })
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        sample.rel(field)
    }

    fn loads_in_any_order(&self) -> bool {
        // Files are read by name, whoever asks; an object store's reader fetches ahead
        // in the order it was given, which helpers reading elsewhere would break.
        !self.input.fetches_ahead()
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError> {
        let mut reader = match self.input.open(&sample.rel(field)) {
            Ok(reader) => reader,
            Err(ReadError::Unreadable(e)) => return Err(HeadError::Unreadable(e)),
            Err(ReadError::Changed { .. }) => return Err(HeadError::Changed),
            Err(ReadError::Vanished) => return Err(HeadError::Vanished),
        };
        let mut head = Vec::with_capacity(n);
        (&mut reader)
            .take(n as u64)
            .read_to_end(&mut head)
            .map_err(|e| HeadError::Unreadable(e.to_string()))?;
        Ok(head)
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        // Every file read whole, in the order the writer asks for them: fetched ahead
        // by a source with latency to hide (an object store).
        let ahead: Vec<ListedFile> = samples
            .iter()
            .filter(|s| s.payload() <= MEMORY_LIMIT)
            .flat_map(|s| {
                s.fields.iter().map(|f| ListedFile {
                    rel: s.rel(f),
                    size: f.size,
                })
            })
            .collect();
        Ok(Box::new(TreeReader {
            input: self.input,
            samples,
            validation,
            ahead: self.input.prefetch(ahead),
        }))
    }
}

struct TreeReader<'a> {
    input: &'a dyn InputSource,
    samples: &'a [SampleSpec],
    validation: Validation,
    ahead: Option<Box<dyn Prefetched + 'a>>,
}

impl SampleReader for TreeReader<'_> {
    fn load(&mut self, index: usize, buf: &mut Vec<u8>) -> Result<Result<Loaded, Vec<Skipped>>> {
        let samples = self.samples;
        let sample = &samples[index];
        let rels: Vec<String> = sample.fields.iter().map(|f| sample.rel(f)).collect();
        if sample.payload() <= MEMORY_LIMIT {
            return self.load_memory(sample, &rels, buf);
        }
        self.load_streams(sample, &rels)
    }
}

impl TreeReader<'_> {
    /// Reads every file of `sample` (at `rels`) into `buf`, one after another.
    fn load_memory(
        &mut self,
        sample: &SampleSpec,
        rels: &[String],
        buf: &mut Vec<u8>,
    ) -> Result<Result<Loaded, Vec<Skipped>>> {
        buf.clear();
        let mut ranges = Vec::with_capacity(sample.fields.len());
        for (field, rel) in sample.fields.iter().zip(rels) {
            let start = buf.len();
            let fetched = self
                .ahead
                .as_mut()
                .and_then(|a| a.take(rel, field.size, buf));
            if fetched.is_none() {
                // Reads departed from the announced order: no more fetching ahead.
                self.ahead = None;
            }
            match fetched.unwrap_or_else(|| self.input.read_into(rel, field.size, buf)) {
                Ok(()) => ranges.push((start, buf.len())),
                Err(e) => return failed(sample, rels, rel, field.size, e),
            }
        }
        Ok(Ok(Loaded::Memory(ranges)))
    }

    /// Checks the content of `sample`'s checked files (at `rels`) as streams, then opens
    /// every file for the writer to stream.
    fn load_streams(
        &self,
        sample: &SampleSpec,
        rels: &[String],
    ) -> Result<Result<Loaded, Vec<Skipped>>> {
        for (field, rel) in sample
            .fields
            .iter()
            .zip(rels)
            .filter(|(f, _)| content::is_checked(&f.ext, self.validation))
        {
            let reader = match self.input.open(rel) {
                Ok(reader) => reader,
                Err(e) => return failed(sample, rels, rel, field.size, e),
            };
            match content::check_stream(&field.ext, reader) {
                Ok(Ok(())) => {}
                Ok(Err(reason)) => {
                    return Ok(Err(leave_out(sample, rels, rel, reason.to_string())));
                }
                Err(e) => {
                    return Ok(Err(leave_out(
                        sample,
                        rels,
                        rel,
                        format!("cannot be read: {e}"),
                    )));
                }
            }
        }
        let mut readers = Vec::with_capacity(sample.fields.len());
        for (field, rel) in sample.fields.iter().zip(rels) {
            match self.input.open(rel) {
                Ok(inner) => readers.push(Tracked::new(inner)),
                Err(e) => return failed(sample, rels, rel, field.size, e),
            }
        }
        Ok(Ok(Loaded::Streams(readers)))
    }
}

/// What a failed read of `rel` (listed at `listed` bytes) of `sample` comes to: the
/// sample left out when the file cannot be read, the run failed when it changed or
/// vanished since it was listed.
fn failed<T>(
    sample: &SampleSpec,
    rels: &[String],
    rel: &str,
    listed: u64,
    e: ReadError,
) -> Result<Result<T, Vec<Skipped>>> {
    match e {
        ReadError::Unreadable(e) => Ok(Err(leave_out(
            sample,
            rels,
            rel,
            format!("cannot be read: {e}"),
        ))),
        ReadError::Changed { read } => Err(Error::InputChanged {
            path: rel.to_string(),
            listed,
            read,
        }),
        ReadError::Vanished => Err(Error::InputVanished {
            path: rel.to_string(),
            listed,
        }),
    }
}

/// Every file of `sample` (at `rels`) left out: `bad` for `reason`, the others with it.
fn leave_out(sample: &SampleSpec, rels: &[String], bad: &str, reason: String) -> Vec<Skipped> {
    rels.iter()
        .map(|rel| Skipped {
            path: rel.clone(),
            reason: if rel == bad {
                reason.clone()
            } else {
                format!(
                    "left out with `{bad}`, another file of sample `{}`",
                    sample.key
                )
            },
        })
        .collect()
}
