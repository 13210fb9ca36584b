//! `sign` and `verify --signature` (`basic`), and against the real OpenSSF Model Signing
//! CLI (`interop`).

mod basic;
mod interop;
