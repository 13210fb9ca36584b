//! The pipeline cut anywhere and run on any number of workers gives the bytes of one
//! sequential read: every record once, in order, numbered alike ([`cuts`]); a run
//! stopped midway resumes to the same bytes ([`stopped`]); several workers read at once
//! ([`readers`]). The corpus and the runs they share are in [`corpus`].

mod corpus;
mod cuts;
mod readers;
mod stopped;
