//! One sample with images: read whole, each image transformed, metadata added, every
//! output field stored in the scratch file.

use std::io::Read;

use shardsmith_image::{Kind, StoreAs, sniff, transform};
use shardsmith_manifest::Skipped;
use shardsmith_shard::content;
use shardsmith_shard::sample::{Loaded, SampleReader};
use shardsmith_shard::{FieldSpec, SampleSpec};

use super::meta;
use super::source::{ImageSource, Origin, Target};

/// A sample ready to be planned.
pub(crate) struct Prepared {
    /// Its output fields, or `None` when it has no image and is read as listed.
    pub spec: Option<SampleSpec>,
    /// Per output field.
    pub origins: Option<Vec<Origin>>,
    /// Images that are not the format their name says (`a.jpg` is a PNG).
    pub mislabelled: Vec<String>,
}

/// A sample left out (every input named, the cause first) or a failure that stops the
/// run (an input that changed, a full scratch disk).
pub(crate) type Outcome = Result<Result<Prepared, Vec<Skipped>>, shardsmith_shard::Error>;

/// One output field before it is stored.
struct Out {
    name: String,
    source_ext: std::sync::Arc<str>,
    bytes: Vec<u8>,
    from: usize,
}

/// Prepares the samples of one contiguous run of the listing, read through one reader
/// of the inner source (a Parquet file is then opened once per run, an object store
/// fetches ahead).
pub(crate) fn prepare_run(src: &ImageSource<'_>, samples: &[SampleSpec]) -> Vec<Outcome> {
    let mut reader = None;
    let mut out = Vec::with_capacity(samples.len());
    for (index, sample) in samples.iter().enumerate() {
        if !sample.fields.iter().any(|f| src.settings.is_image(&f.ext)) {
            out.push(Ok(Ok(Prepared {
                spec: None,
                origins: None,
                mislabelled: Vec::new(),
            })));
            continue;
        }
        let reader = match &mut reader {
            Some(reader) => reader,
            None => match src.inner.reader(samples, src.validation) {
                Ok(r) => reader.insert(r),
                Err(e) => {
                    out.push(Err(e));
                    return out;
                }
            },
        };
        out.push(match read_whole(src, reader.as_mut(), index, sample) {
            Err(e) => Err(e),
            Ok(Err(skips)) => Ok(Err(skips)),
            Ok(Ok(values)) => prepare(src, sample, &values),
        });
    }
    out
}

/// One sample with images, transformed and stored; left out whole (every input named,
/// the cause first) when one of its fields cannot be.
fn prepare(src: &ImageSource<'_>, sample: &SampleSpec, values: &[Vec<u8>]) -> Outcome {
    let paths: Vec<String> = sample
        .fields
        .iter()
        .map(|f| src.inner.field_path(sample, f))
        .collect();
    match output_fields(src, sample, values, &paths) {
        Ok((outs, mislabelled)) => store(src, sample, outs, mislabelled),
        Err((bad, reason)) => Ok(Err(leave_out(&paths, sample, bad, reason))),
    }
}

/// Every input file of `sample` left out: field `bad` for `reason`, the others with it.
fn leave_out(paths: &[String], sample: &SampleSpec, bad: usize, reason: String) -> Vec<Skipped> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| Skipped {
            path: path.clone(),
            reason: if i == bad {
                reason.clone()
            } else {
                format!(
                    "left out with `{}`, another file of sample `{}`",
                    paths[bad], sample.key
                )
            },
        })
        .collect()
}

/// Why a sample is left out: the input field that caused it, and the reason.
type LeftOut = (usize, String);

/// The output fields of `sample`, sorted by name: the others as they are, each image
/// transformed, the images' metadata added; and the images whose name says another
/// format.
fn output_fields(
    src: &ImageSource<'_>,
    sample: &SampleSpec,
    values: &[Vec<u8>],
    paths: &[String],
) -> Result<(Vec<Out>, Vec<String>), LeftOut> {
    let mut outs: Vec<Out> = Vec::with_capacity(sample.fields.len() + 5);
    let mut metadata = Vec::new();
    let mut mislabelled = Vec::new();
    let mut json_at = None;
    for (i, (field, data)) in sample.fields.iter().zip(values).enumerate() {
        if !src.settings.is_image(&field.ext) {
            if &*field.ext == "json" && src.target == Target::WebDataset {
                json_at = Some(outs.len());
            }
            outs.push(Out {
                name: field.ext.to_string(),
                source_ext: field.source_ext.clone(),
                bytes: data.clone(),
                from: i,
            });
            continue;
        }
        if let Some(note) = mislabel(field, data, &paths[i]) {
            mislabelled.push(note);
        }
        let (out, entries) = transform_image(src, i, field, data, metadata.is_empty())?;
        metadata.push((i, entries));
        outs.push(out);
    }
    add_metadata(src, &mut outs, json_at, metadata)?;
    outs.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = outs.windows(2).find(|w| w[0].name == w[1].name) {
        let (a, b) = (&pair[0], &pair[1]);
        let reason = format!(
            "`{}` and `{}` would both be stored as field `{}`",
            paths[a.from], paths[b.from], a.name
        );
        return Err((b.from, reason));
    }
    Ok((outs, mislabelled))
}

/// The note for an image that is not the format its name says, if it is not.
fn mislabel(field: &FieldSpec, data: &[u8], path: &str) -> Option<String> {
    let kind = sniff(data)?;
    let declared = Kind::from_ext(&field.ext)?;
    (declared != kind).then(|| format!("`{path}` is a {}", kind.name().to_uppercase()))
}

/// Image field `i` checked and transformed, with its metadata entries (the first image's
/// unprefixed), or why it leaves the sample out.
fn transform_image(
    src: &ImageSource<'_>,
    i: usize,
    field: &FieldSpec,
    data: &[u8],
    first: bool,
) -> Result<(Out, Vec<(String, serde_json::Value)>), LeftOut> {
    let options = &src.settings.options;
    let Some(kind) = sniff(data) else {
        let reason = if data.is_empty() {
            "is empty, which is not a valid image".to_string()
        } else {
            shardsmith_image::Error::NotAnImage.to_string()
        };
        return Err((i, reason));
    };
    content::check(kind.name(), data, src.validation).map_err(|reason| (i, reason.to_string()))?;
    let done = transform(data, kind, options).map_err(|e| (i, e.to_string()))?;
    let name = output_name(&field.ext, options.output_ext());
    if options.store == StoreAs::Encoded {
        src.images
            .lock()
            .expect("not poisoned")
            .insert(name.clone());
    } else {
        src.tensor_shapes
            .lock()
            .expect("not poisoned")
            .entry(name.clone())
            .or_default()
            .insert((done.height, done.width, 3));
    }
    let entries = meta::entries(&meta::prefix(first, &field.ext), &done);
    let out = Out {
        name,
        source_ext: field.source_ext.clone(),
        bytes: done.bytes,
        from: i,
    };
    Ok((out, entries))
}

/// The images' metadata added to the outputs: merged into the sample's JSON (or a JSON
/// of its own) for WebDataset, one column each for the other formats.
fn add_metadata(
    src: &ImageSource<'_>,
    outs: &mut Vec<Out>,
    json_at: Option<usize>,
    metadata: Vec<(usize, Vec<(String, serde_json::Value)>)>,
) -> Result<(), LeftOut> {
    let first_image = metadata.first().map_or(0, |(i, _)| *i);
    let entries: Vec<_> = metadata.into_iter().flat_map(|(_, e)| e).collect();
    if src.target == Target::WebDataset {
        match json_at {
            Some(at) => match meta::merge(&outs[at].bytes, &entries) {
                Ok(merged) => outs[at].bytes = merged,
                Err(reason) => return Err((outs[at].from, reason.to_string())),
            },
            None => outs.push(Out {
                name: "json".into(),
                source_ext: "json".into(),
                bytes: meta::object(&entries),
                from: first_image,
            }),
        }
    } else {
        let mut columns = src.columns.lock().expect("not poisoned");
        for (name, value) in &entries {
            columns.insert(name.clone());
            outs.push(Out {
                name: name.clone(),
                source_ext: name.as_str().into(),
                bytes: meta::text(value),
                from: first_image,
            });
        }
    }
    Ok(())
}

/// The output fields stored in the scratch file: the sample to plan, and where each
/// field is.
fn store(
    src: &ImageSource<'_>,
    sample: &SampleSpec,
    outs: Vec<Out>,
    mislabelled: Vec<String>,
) -> Outcome {
    let mut origins = Vec::with_capacity(outs.len());
    let mut fields = Vec::with_capacity(outs.len());
    for out in outs {
        let offset = src
            .spill
            .put(&out.bytes)
            .map_err(|e| shardsmith_shard::Error::Io {
                op: "storing a transformed sample in the scratch file",
                path: src.spill.dir().into(),
                source: e,
            })?;
        let len = out.bytes.len() as u64;
        origins.push(Origin {
            offset,
            len,
            from: out.from,
        });
        let mut spec = FieldSpec::new(&out.name, len);
        spec.source_ext = out.source_ext;
        fields.push(spec);
    }
    Ok(Ok(Prepared {
        spec: Some(SampleSpec {
            key: sample.key.clone(),
            fields,
            origin: sample.origin,
        }),
        origins: Some(origins),
        mislabelled,
    }))
}

/// The name an image field gets: its image extension replaced by the output's
/// (`seg.png` -> `seg.jpg`); a field named otherwise (`--image-fields image`) keeps it.
fn output_name(ext: &str, out: &str) -> String {
    if Kind::from_ext(ext).is_none() {
        return ext.to_string();
    }
    match ext.rsplit_once('.') {
        Some((stem, _)) => format!("{stem}.{out}"),
        None => out.to_string(),
    }
}

/// Every field of `sample` (number `index` of the reader's run), read whole.
fn read_whole(
    src: &ImageSource<'_>,
    reader: &mut dyn SampleReader,
    index: usize,
    sample: &SampleSpec,
) -> Result<Result<Vec<Vec<u8>>, Vec<Skipped>>, shardsmith_shard::Error> {
    let mut buf = Vec::new();
    match reader.load(index, &mut buf)? {
        Err(skips) => Ok(Err(skips)),
        Ok(Loaded::Memory(ranges)) => Ok(Ok(ranges
            .into_iter()
            .map(|(start, end)| buf[start..end].to_vec())
            .collect())),
        Ok(Loaded::Streams(readers)) => {
            let mut values = Vec::with_capacity(readers.len());
            for (field, mut reader) in sample.fields.iter().zip(readers) {
                let mut value = Vec::with_capacity(field.size as usize);
                reader
                    .read_to_end(&mut value)
                    .map_err(|e| shardsmith_shard::Error::Io {
                        op: "reading input",
                        path: src.inner.field_path(sample, field).into(),
                        source: e,
                    })?;
                values.push(value);
            }
            Ok(Ok(values))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::output_name;

    #[test]
    fn image_fields_take_the_output_extension() {
        assert_eq!(output_name("jpeg", "jpg"), "jpg");
        assert_eq!(output_name("png", "npy"), "npy");
        assert_eq!(output_name("seg.png", "jpg"), "seg.jpg");
        assert_eq!(output_name("image", "jpg"), "image");
    }
}
