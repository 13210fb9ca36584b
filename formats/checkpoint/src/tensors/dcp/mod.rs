//! The tensors of a PyTorch DCP checkpoint: `.metadata` gives each tensor's global
//! shape, dtype and chunks, and where each chunk is stored (`storage_data`: a data
//! file, an offset and a length, and the transforms its bytes went through). A chunk
//! saved with the default `TORCH_SAVE` format is a complete torch zip at that offset
//! (with the ZStandard extension, a zstd frame decoding to one); saved with
//! `serialization_format=SAFETENSORS` it is a tensor of a safetensors blob there.
//!
//! [`resolve`] holds every chunk against the data stored for it, as `dcp.load` does
//! (one stored tensor, of the chunk's shape, and of the dtype `.metadata` declares,
//! which a load into a state dict built from it, as `dcp_to_torch_save` does, gives).
//! It is the one check of `.metadata` against the data: `diff` and `ls` stop at its
//! first problem ([`directory`]), `verify` reports every one ([`check`]).

mod findings;
mod read;
mod resolve;

pub(crate) use self::findings::check;
pub(super) use self::resolve::directory;
#[cfg(test)]
use self::{read::Cause, resolve::resolve};

#[cfg(test)]
mod tests;
