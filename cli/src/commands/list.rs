//! `shardsmith list INPUT [-o LIST]`: the files `pack` would read, with their sizes, as
//! a list `pack --files-from` reads back (one listing shared by the tasks of a split run).

use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use shardsmith_store::Location;
use shardsmith_store::given;

use super::Status;
use crate::args::ListArgs;
use crate::output::refuse;
use crate::output::{Printer, seconds};
use crate::report;
use crate::size::human_bytes;
use crate::storage;

pub fn run(args: &ListArgs, printer: &Printer) -> Result<Status> {
    let started = Instant::now();
    if printer.json() && args.output.is_none() {
        refuse!(
            Usage,
            "--json needs -o LIST: without it the list itself is what goes to stdout"
        );
    }
    let input = storage::location(&args.input)?;
    if let Location::Local(path) = &input {
        crate::output::need_directory(path)?;
    }
    let listing = storage::source(&input).list()?;
    let text = given::render(&listing.files);
    let bytes: u64 = listing.files.iter().map(|f| f.size).sum();
    // Left out as `pack` leaves them out: the first five, or all with -v.
    let shown = if printer.verbose() { usize::MAX } else { 5 };
    for skip in listing.skipped.iter().take(shown) {
        printer.warn(&format!("`{}` left out: {}", skip.path, skip.reason));
    }
    if listing.skipped.len() > shown {
        printer.warn(&format!(
            "... {} more left out (-v lists them all)",
            listing.skipped.len() - shown
        ));
    }
    let Some(list) = &args.output else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .context("writing the list to stdout")?;
        return Ok(Status::Clean);
    };
    storage::write_small(list, text.as_bytes())?;
    let elapsed = started.elapsed();
    printer.summary(&format!(
        "listed {} files ({}) of {} into {} in {}\n",
        listing.files.len(),
        human_bytes(bytes),
        input.display(),
        list.display(),
        seconds(elapsed),
    ));
    printer.report(&report::List {
        bytes,
        command: "list",
        files: listing.files.len(),
        input: input.display(),
        list: list.display().to_string(),
        seconds: elapsed.as_secs_f64(),
        skipped: &listing.skipped,
        version: report::VERSION,
    });
    Ok(Status::Clean)
}
