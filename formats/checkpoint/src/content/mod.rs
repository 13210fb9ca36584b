//! Content checks shared by every checkpoint format, done during the single read:
//! runs of zero bytes inside tensor data, filesystem holes, NaN/Inf counts, and what a
//! file holds when it is not a checkpoint at all (a Git LFS pointer, an HTML page).

mod holes;
mod scan;
mod wrong;
mod zeros;

pub use holes::{holes, in_hole};
pub use scan::TensorScan;
pub use wrong::wrong_content;

#[cfg(test)]
mod tests;
