//! The repository as a whole: its pages' examples and links, the licence, the crates'
//! layering, the tests' costs, and the `--json` reports against their schema.

mod costs;
pub mod doc_links;
mod layers;
mod licence;
mod readme;
pub mod report_schema;
