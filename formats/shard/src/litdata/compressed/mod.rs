//! LitData chunks that `litdata.optimize(compression="zstd")` (or `"zstd:N"`) wrapped in
//! zstd, turned back into plain chunks ([`crate::litdata::chunk`]'s layout) so that the
//! input and `verify` read them as any other (litdata 0.2.76, `streaming/writer.py`
//! `_create_chunk` / `write_chunk`, `streaming/framed_zstd.py`, `streaming/config.py`).
//!
//! The config's `compression_level` says the wrap ([`Wrap`]; absent or null is `chunk`):
//!
//! - `chunk`: the whole chunk file is one zstd stream, named `chunk-R-N.{compression}.bin`
//!   (`chunk-0-0.zstd.bin`); its index entry's `chunk_bytes` is the size *before*
//!   compression;
//! - `batch` (`optimize`'s default for zstd): `LDFZ01\0\0`, `u16` version 1, `u16` flags,
//!   `u32` items N, `u32` items per frame K, `u32` frames F, `u32` offsets[N+1] into the
//!   items' concatenated bytes (the first 0), F frame entries (`u32` first item, `u32`
//!   items, `u64` file offset, `u32` compressed and `u32` uncompressed length), then the
//!   zstd frames of K items' bytes each; `chunk_bytes` is the file's size;
//! - `sample`: the plain header, each item's bytes its own zstd frame; `chunk_bytes` is
//!   the file's size.
//!
//! Chunks whose items are kept only in their Arrow footer are never wrapped: their IPC
//! file is written with IPC buffer compression instead (`ipc_compression`, read by
//! arrow-ipc). Damaged wraps are [`WrapError`]s naming the frame or item; what is
//! allocated grows with the bytes zstd really gives back, at most [`MAX_CHUNK`]
//! (a plain chunk's limit).
//!
//! [`MAX_CHUNK`]: crate::litdata::MAX_CHUNK

mod config;
mod inflate;

pub use self::config::{Compression, Wrap};
pub use self::inflate::{FRAMED_MAGIC, WrapError, inflate_file, unframe, unsample};

#[cfg(test)]
mod tests;
