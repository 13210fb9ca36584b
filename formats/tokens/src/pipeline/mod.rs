//! The `tokenize` pipeline: the input cut into units in input order ([`plan`]), read
//! and tokenized by `--jobs` workers ([`read`], [`workers`]) under a bound on the batches
//! in flight ([`schedule`]), written back in input order by whichever worker is free
//! ([`ordered`], [`output`]), and committed shard by shard. No thread reads the whole
//! input or does any work for every byte of it but the ordered writing (appending the
//! bytes the workers encoded, and hashing them).

mod ordered;
mod output;
mod plan;
mod read;
mod schedule;
mod workers;

#[cfg(test)]
mod tests;

pub(crate) use output::{Output, first_line};
pub(crate) use plan::{CUT_BYTES, Planner};
pub(crate) use workers::pipeline;
