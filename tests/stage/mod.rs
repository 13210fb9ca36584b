//! `stage` between local directories: large files copied by their chunks (`chunks`).
//! Stage from and to buckets is in `remote` (`s3_verify`, `s3_faults`, `gcs`, `azure`).

pub mod chunks;
