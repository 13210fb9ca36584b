//! [`SampleSource`] for [`TarShards`]: the listing of every shard's samples (in parallel),
//! field paths, and the reader of their bytes.

use rayon::prelude::*;

use super::tar_shards::TarShards;
use super::{list, read, shard};
use crate::content::Validation;
use crate::sample::{FieldSpec, HeadError, SampleListing, SampleReader, SampleSource, SampleSpec};
use crate::{Error, Result};

impl SampleSource for TarShards {
    fn describe(&self) -> String {
        self.root.clone()
    }

    /// Walks every shard (in parallel; the result in shard order), spilling compressed
    /// ones into the scratch directory when there is one.
    fn samples(&self) -> Result<SampleListing> {
        let scratch = self.scratch.as_deref();
        let listed: Vec<Result<list::Listed>> = self
            .files
            .par_iter()
            .enumerate()
            .map(|(i, file)| list::list_shard(self.source.as_ref(), file, i, scratch))
            .collect();
        let mut listing = SampleListing::default();
        let mut bodies = Vec::with_capacity(listed.len());
        for (i, shard) in listed.into_iter().enumerate() {
            let shard = shard?;
            let prefix = &self.files[i].key_prefix;
            bodies.push(shard.body);
            listing.skipped.extend(shard.skipped);
            listing.samples.reserve(shard.samples.len());
            for mut sample in shard.samples {
                if !prefix.is_empty() {
                    sample.key.insert_str(0, prefix);
                }
                listing.samples.push(sample);
            }
        }
        *self
            .bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = bodies;
        Ok(listing)
    }

    fn field_path(&self, sample: &SampleSpec, field: &FieldSpec) -> String {
        let (shard, _) = shard::place(sample);
        match self.files.get(shard) {
            Some(file) => format!(
                "{}/{}.{}",
                file.rel,
                file.member_key(&sample.key),
                field.source_ext
            ),
            None => sample.rel(field),
        }
    }

    fn container(&self, sample: &SampleSpec) -> Option<String> {
        let (shard, _) = shard::place(sample);
        self.files.get(shard).map(|f| f.rel.clone())
    }

    fn head(&self, sample: &SampleSpec, field: &FieldSpec, n: usize) -> Result<Vec<u8>, HeadError> {
        let one = std::slice::from_ref(sample);
        let mut reader = self.reader(one, Validation::None)?;
        let mut buf = Vec::new();
        let no_field = || HeadError::NoField {
            key: sample.key.clone(),
            field: field.ext.to_string(),
        };
        match reader.load(0, &mut buf)? {
            Ok(crate::sample::Loaded::Memory(ranges)) => {
                let i = sample
                    .fields
                    .iter()
                    .position(|f| f == field)
                    .ok_or_else(no_field)?;
                let (start, end) = ranges[i];
                Ok(buf[start..end.min(start + n)].to_vec())
            }
            Ok(crate::sample::Loaded::Streams(mut streams)) => {
                let i = sample
                    .fields
                    .iter()
                    .position(|f| f == field)
                    .ok_or_else(no_field)?;
                let mut head = Vec::with_capacity(n);
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(&mut streams[i], n as u64),
                    &mut head,
                )
                .map_err(|e| HeadError::Unreadable(e.to_string()))?;
                Ok(head)
            }
            Err(skips) => Err(HeadError::LeftOut(
                skips
                    .first()
                    .map_or_else(|| "cannot be read".into(), |s| s.reason.clone()),
            )),
        }
    }

    fn shuffle_refusal(&self) -> Option<String> {
        let bodies = self.bodies();
        let streamed = self
            .files
            .iter()
            .zip(&bodies)
            .find(|(_, body)| !body.random_access());
        streamed.map(|(file, _)| {
            format!(
                "`{}` is compressed and was not decompressed into a scratch copy, so its samples can only be read in order",
                file.rel
            )
        })
    }

    fn reader<'a>(
        &'a self,
        samples: &'a [SampleSpec],
        validation: Validation,
    ) -> Result<Box<dyn SampleReader + 'a>> {
        let bodies = self.bodies();
        if bodies.len() != self.files.len() {
            return Err(Error::Setting(
                "the WebDataset input is read before it was listed".into(),
            ));
        }
        Ok(Box::new(read::TarReader::new(
            self.source.as_ref(),
            &self.files,
            bodies,
            samples,
            validation,
        )))
    }
}
