//! SIGINT, SIGTERM and SIGHUP: an interrupted run removes its temporary files and lock
//! and exits with 128 + the signal's number, as shells expect. Finished shards and their
//! records stay, so the same command resumes.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Starts the thread that waits for the signals.
pub fn install() {
    let Ok(mut signals) = Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let removed = shardsmith_store::sink::discard_temporaries();
            let name = match signal {
                SIGINT => "SIGINT",
                SIGTERM => "SIGTERM",
                _ => "SIGHUP",
            };
            eprintln!(
                "\ninterrupted by {name}: {removed} temporary file(s) removed; finished shards are kept, and the same command resumes"
            );
            std::process::exit(128 + signal);
        }
    });
}
