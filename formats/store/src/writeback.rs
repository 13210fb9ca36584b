//! Early write-back of large local files. A file is made durable (fsync) before it is
//! renamed into place; done only then, that fsync waits for the whole file to reach the
//! disk. Instead, every [`EVERY`] bytes written, a background thread asks the kernel to
//! write what is dirty so far (`fdatasync` on a second handle), so the disk works while
//! the next bytes are produced and the fsync at commit waits for the last few MiB only.

use std::fs::File;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Bytes written between two background syncs.
const EVERY: u64 = 32 << 20;

/// The write-back of one file being written.
#[derive(Default)]
pub(crate) struct Writeback {
    /// Bytes written since the last sync was asked for.
    pending: u64,
    /// Asks the thread for one more sync (one may wait: it covers every byte before it).
    ask: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Writeback {
    /// Notes `n` more bytes written to `file`; every [`EVERY`] bytes, a background sync
    /// is asked for (the thread starts at the first, so small files never get one).
    pub(crate) fn wrote(&mut self, file: &File, n: usize) {
        self.pending += n as u64;
        if self.pending < EVERY {
            return;
        }
        self.pending = 0;
        if self.ask.is_none() {
            let Ok(handle) = file.try_clone() else { return };
            let (ask, asked) = sync_channel::<()>(1);
            let thread = std::thread::Builder::new()
                .name("writeback".into())
                .spawn(move || {
                    // Errors are the final fsync's to report.
                    while asked.recv().is_ok() {
                        let _ = handle.sync_data();
                    }
                });
            let Ok(thread) = thread else { return };
            self.ask = Some(ask);
            self.thread = Some(thread);
        }
        if let Some(ask) = &self.ask {
            let _ = ask.try_send(());
        }
    }

    /// Waits for the background sync in progress, before the final fsync.
    pub(crate) fn finish(&mut self) {
        self.ask = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn background_syncs_start_only_for_large_files() {
        let mut file = tempfile::tempfile().unwrap();
        let mut wb = Writeback::default();
        let block = vec![7u8; 1 << 20];
        for _ in 0..31 {
            file.write_all(&block).unwrap();
            wb.wrote(&file, block.len());
        }
        assert!(wb.thread.is_none(), "31 MiB: no thread");
        for _ in 0..40 {
            file.write_all(&block).unwrap();
            wb.wrote(&file, block.len());
        }
        assert!(wb.thread.is_some());
        wb.finish();
        assert!(wb.thread.is_none() && wb.ask.is_none());
        file.sync_all().unwrap();
        assert_eq!(file.metadata().unwrap().len(), 71 << 20);
    }
}
