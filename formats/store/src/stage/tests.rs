//! Staging by chunks, local to local.
