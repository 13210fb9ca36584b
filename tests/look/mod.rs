//! `shardsmith ls`, `cat` and `stats` on datasets `pack` and `tokenize` made, on the
//! checkpoint fixtures and on what other writers made: exact output, field bytes equal to
//! the original files, the sample tar read back, only the holding shard read, errors with
//! their messages.

mod bucket;
mod cat;
mod ls;
mod util;
mod writers;
