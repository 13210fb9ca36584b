//! The SHA-256 of a tensor's canonical form, and its read errors as crate errors.

use std::io;

use sha2::{Digest, Sha256};

use crate::Error;
use crate::tensors::model::Tensor;

/// The SHA-256 (lowercase hex) of `tensor`'s canonical form.
pub fn digest(tensor: &Tensor) -> Result<String, Error> {
    let mut reader = tensor.canonical()?;
    let mut hasher = Sha256::new();
    loop {
        let chunk = reader.next_chunk().map_err(|e| read_error(tensor, e))?;
        if chunk.is_empty() {
            break;
        }
        let n = chunk.len();
        hasher.update(chunk);
        reader.consume(n);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A read error of `tensor`'s canonical form as a [`Error`].
pub(crate) fn read_error(tensor: &Tensor, e: io::Error) -> Error {
    let path = tensor
        .pieces
        .first()
        .map_or_else(|| tensor.file.clone(), |p| p.path.display().to_string());
    Error::Malformed {
        path,
        reason: format!("tensor `{}`: {e}", tensor.name),
    }
}
