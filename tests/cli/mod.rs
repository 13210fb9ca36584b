//! The command line as a whole: help, version and global flags (`flags`), what a new
//! user meets first, shell completions and man pages.

mod first_contact;
mod flags;
mod shell;
