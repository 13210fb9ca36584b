//! Signing and checking against bundles the real `model_signing` 1.1.1 wrote
//! (tests/fixtures/model_signing, see its README): one digest per file (`files`), one
//! per shard (`shards`).

mod files;
mod fixture;
mod shards;
