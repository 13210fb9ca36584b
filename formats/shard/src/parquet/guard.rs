//! Panics of the parquet and arrow crates on malformed data, as errors.

use super::error::DecodeError;

/// Runs `read`, a call into the parquet and arrow crates on bytes from a file, turning a
/// panic of those crates on malformed data into an error. They still have such panics
/// (an empty bit-packed run asserts in `arrow-buffer`); a file anyone could have written
/// must give a finding, never end the process.
pub fn guarded<T, E: From<DecodeError>>(read: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    caught(read).unwrap_or_else(|why| Err(DecodeError::Panicked(why).into()))
}

/// Runs `read`, a call into the arrow or parquet crates on bytes from a file; a panic of
/// theirs on malformed data is `Err` with its message (for readers whose errors are not
/// [`DecodeError`]s: Arrow IPC streams and files).
pub fn caught<T>(read: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into())
    })
}
