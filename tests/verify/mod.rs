//! `verify` of packed shards: each corruption class found exactly (`basic`), and that
//! an OK means something (`nothing`). Other formats' verification is beside them:
//! `tokenize::verify`, `checkpoint`, `remote::s3_verify`.

mod basic;
mod chunks;
mod nothing;
