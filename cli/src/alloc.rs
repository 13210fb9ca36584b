//! The global allocator, and how soon it gives freed memory back to the kernel.
//!
//! mimalloc by default keeps freed memory for a while (1 s in v3) before returning it.
//! That is what buffer-churning runs want: a Parquet row group's Arrow buffers, and
//! tokenize's batches, are freed and allocated again batch after batch, and returning them
//! each time costs hundreds of thousands of page faults (the kernel zeroing every page
//! again; tokenize 8 % slower). The file-tree work (pack of raw files, manifest,
//! verify) does better returning memory at once: listing and planning millions of input
//! files leave freed blocks of many sizes behind, and keeping them raised pack's peak
//! RSS on the 90,000-file benchmark from about 43 to about 65 MiB, most of it growing
//! with the number of input files.
//!
//! The workspace denies `unsafe`; this module is its one exception (one FFI call to set
//! an integer option).
#![allow(unsafe_code)]

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use shardsmith_cli::KeepFreed;

/// `mi_option_purge_delay` in mimalloc v3's `mimalloc.h` (libmimalloc-sys 0.1.49, pinned
/// by Cargo.lock); the sys crate does not name it.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back at once ([`KeepFreed::No`]), after mimalloc's default delay
/// ([`KeepFreed::AWhile`]), or after [`ACROSS_SHARDS_MS`]. Call before any thread is
/// started: mimalloc options are not synchronised.
///
/// Parquet output needs the longest delay: a shard's row group is built whole in
/// memory (Arrow builders, then the column writers' pages, over a hundred MiB per
/// worker), freed at the shard's end and built again for the next. With the default
/// delay most of it was still returned and faulted back in (43,000 page faults, a
/// quarter of the CPU time, on the 30,000-sample benchmark at -j 2); kept for 10 s,
/// 8,600 faults, and a peak RSS about a tenth higher.
pub fn configure(keep: KeepFreed) {
    let delay = match keep {
        KeepFreed::No => 0,
        KeepFreed::AWhile => return,
        KeepFreed::AcrossShards => ACROSS_SHARDS_MS,
    };
    // SAFETY: sets one integer option; called from `main` before other threads exist.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, delay) };
}

/// The purge delay for [`KeepFreed::AcrossShards`], in milliseconds.
const ACROSS_SHARDS_MS: std::os::raw::c_long = 10_000;

#[cfg(test)]
mod tests {
    use shardsmith_cli::KeepFreed;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // v3's default purge delay is 1000 ms (MIMALLOC_PURGE_DELAY overrides it at
        // start-up): seeing it proves the constant names the right option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(
                get(),
                1000,
                "option {} is not the purge delay",
                super::PURGE_DELAY
            );
        }
        super::configure(KeepFreed::AWhile);
        assert_ne!(get(), 0, "buffer-churning runs keep the delay");
        super::configure(KeepFreed::AcrossShards);
        assert_eq!(get(), 10_000);
        super::configure(KeepFreed::No);
        assert_eq!(get(), 0);
    }
}
