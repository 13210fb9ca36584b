//! Hugging Face `datasets` directories, as `Dataset.save_to_disk` writes them and
//! `load_from_disk` reads them: Arrow IPC stream shards (`data-NNNNN.arrow`, one row
//! per sample: a key column, `__key__` by default, and one column per field, `string`
//! for text fields and `--column NAME:str`, `binary` otherwise, `int64`/`int32`/
//! `float64` when cast with `--column`), then `dataset_info.json` (the features) and
//! `state.json` (the files, in order, and a fingerprint derived from their content).
//!
//! Input (`pack` over such a directory, `ls`, `cat`, `stats`) is [`input`].

mod dataset;
pub mod def;
mod encode;
mod format;
pub mod input;
mod inspect;
mod layout;
#[cfg(test)]
mod tests;

pub use format::Hf;
pub use inspect::HfInspector;
