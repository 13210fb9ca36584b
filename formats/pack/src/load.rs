//! What loading a sample for a shard needs ([`WriteContext`]) and does: read it, then
//! check its content and the format's values. Shared by a shard's writer
//! ([`crate::write`]) and the workers that read ahead for it ([`crate::ahead`]).

use shardsmith_manifest::Skipped;
use shardsmith_shard::SampleSpec;
use shardsmith_shard::content::{self, Validation};
use shardsmith_shard::format::ShardFormat;
use shardsmith_shard::sample::{Loaded, SampleReader, SampleSource};
use shardsmith_store::OutputSink;

use super::observer::PackObserver;

/// What the writer needs besides the samples.
pub(crate) struct WriteContext<'a> {
    pub source: &'a dyn SampleSource,
    pub sink: &'a dyn OutputSink,
    pub format: &'a dyn ShardFormat,
    pub validation: Validation,
    pub strict: bool,
    pub observer: &'a dyn PackObserver,
}

/// A sample as loaded and checked: what the writer would have got loading it itself.
pub(crate) type LoadResult = shardsmith_shard::Result<Result<Loaded, Vec<Skipped>>>;

/// Loads sample `index` of `reader`'s slice and checks it, as the writer does.
pub(crate) fn load_checked(
    ctx: &WriteContext<'_>,
    reader: &mut dyn SampleReader,
    index: usize,
    sample: &SampleSpec,
    buf: &mut Vec<u8>,
) -> LoadResult {
    Ok(reader
        .load(index, buf)?
        .and_then(|loaded| check(ctx, sample, buf, loaded)))
}

/// Content checks (by field name) and the format's own value checks, on a sample held
/// in memory; streamed samples were checked while streaming.
fn check(
    ctx: &WriteContext<'_>,
    sample: &SampleSpec,
    buf: &[u8],
    loaded: Loaded,
) -> Result<Loaded, Vec<Skipped>> {
    let Loaded::Memory(ranges) = &loaded else {
        return Ok(loaded);
    };
    let values: Vec<&[u8]> = ranges
        .iter()
        .map(|&(start, end)| &buf[start..end])
        .collect();
    let paths = || {
        sample
            .fields
            .iter()
            .map(|f| ctx.source.field_path(sample, f))
    };
    for (field, value) in sample.fields.iter().zip(&values) {
        if let Err(reason) = content::check(&field.ext, value, ctx.validation) {
            let bad = ctx.source.field_path(sample, field);
            return Err(paths()
                .map(|path| Skipped {
                    reason: if path == bad {
                        reason.to_string()
                    } else {
                        format!(
                            "left out with `{bad}`, another file of sample `{}`",
                            sample.key
                        )
                    },
                    path,
                })
                .collect());
        }
    }
    if let Err(reason) = ctx.format.check_values(sample, &values) {
        return Err(paths()
            .map(|path| Skipped {
                path,
                reason: format!("sample `{}`: {reason}", sample.key),
            })
            .collect());
    }
    Ok(loaded)
}
