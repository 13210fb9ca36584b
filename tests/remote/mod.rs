//! Object storage: S3 against a real server (`s3` starts it) for `pack`, `tokenize`,
//! `verify`, `audit`, faults and waits; GCS, Azure, and TLS.

mod azure;
mod gcs;
pub mod s3;
mod s3_audit;
mod s3_faults;
mod s3_pack;
mod s3_verify;
mod s3_waits;
mod tls;
