//! Runs that fail or are cut short: injected faults (a full disk, a read-only output,
//! inputs that change, signals), failed runs, and what a Ctrl-C leaves.

mod failed;
pub mod faults;
mod unfinished;
