//! Verifying Parquet files: the magic at both ends while the bytes stream past, then
//! the footer and every page decoded, row group by row group, through the parquet crate
//! (a second read of the file, from the page cache). A row group that fails to decode
//! is reported with its byte range.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;

use parquet::file::metadata::RowGroupMetaData;
use serde_json::Value;
use shardsmith_manifest::{FileContext, Finding, FindingKind, Inspection, Inspector};
use shardsmith_store::LocalFile;

use super::error::ReadError;
use super::rows::ParquetFile;

/// What shardsmith could not check in a file that is not damaged (encrypted, or too
/// large to decode at once): a warning, never an error.
fn not_checked(path: &str, why: String) -> Finding {
    Finding::warning(FindingKind::NotChecked, path, why)
}

/// What checking one row group found.
enum GroupCheck {
    /// It decodes, to this many rows.
    Decoded(u64),
    /// It is damaged (a finding says how).
    Failed,
    /// It could not be checked (too large to decode at once).
    Unchecked,
}

/// Structural checker for one Parquet file.
pub struct ParquetInspector {
    path: String,
    full: PathBuf,
    head: Vec<u8>,
    tail: Vec<u8>,
    len: u64,
}

impl ParquetInspector {
    /// A checker for the file described by `ctx`.
    pub fn new(ctx: &FileContext<'_>) -> Self {
        Self {
            path: ctx.path.to_string(),
            full: ctx.root.join(ctx.path),
            head: Vec::new(),
            tail: Vec::new(),
            len: 0,
        }
    }

    /// Checks the magic at both ends and the footer's length, and reads the footer; the
    /// file and the footer's length, or `None` (the findings say why) when nothing more
    /// can be checked.
    fn open_footer(&self, findings: &mut Vec<Finding>) -> Option<(ParquetFile, u64)> {
        let error =
            |kind, at: u64, message: String| Finding::error(kind, &self.path, message).at(at);
        let magic = &self.tail[self.tail.len().saturating_sub(4)..];
        if self.len >= 12 && self.head == b"PARE" && magic == b"PARE" {
            findings.push(not_checked(
                &self.path,
                "is an encrypted Parquet file (encrypted footer, `PARE`): shardsmith has no keys, so neither its footer nor its pages are checked".into(),
            ));
            return None;
        }
        if self.head != b"PAR1" {
            findings.push(error(
                FindingKind::BadHeader,
                0,
                "does not start with the Parquet magic `PAR1`".into(),
            ));
        }
        if self.len < 12 || magic != b"PAR1" {
            findings.push(error(
                FindingKind::Truncated,
                self.len,
                "does not end with the Parquet magic `PAR1`: the footer is missing (truncated or still being written)".into(),
            ));
            return None;
        }
        let footer_len = u64::from(u32::from_le_bytes(
            self.tail[..4].try_into().expect("4 bytes"),
        ));
        if footer_len + 12 > self.len {
            findings.push(error(
                FindingKind::BadHeader,
                self.len - 8,
                format!(
                    "footer length {footer_len} is larger than the file ({} bytes)",
                    self.len
                ),
            ));
            return None;
        }
        let file = match File::open(&self.full)
            .and_then(LocalFile::new)
            .map_err(|e| ReadError::Damaged(e.to_string()))
            .and_then(|input| ParquetFile::open(Arc::new(input)))
        {
            Ok(file) => file,
            Err(ReadError::Encrypted(why)) => {
                findings.push(not_checked(&self.path, why));
                return None;
            }
            Err(e) => {
                findings.push(error(
                    FindingKind::BadHeader,
                    self.len - 8 - footer_len,
                    format!("footer cannot be read: {e}"),
                ));
                return None;
            }
        };
        Some((file, footer_len))
    }

    /// Decodes row group `i` (whose chunks the footer puts in the file), reporting what
    /// is wrong with it.
    fn check_group(
        &self,
        file: &ParquetFile,
        i: usize,
        group: &RowGroupMetaData,
        footer_at: u64,
        findings: &mut Vec<Finding>,
    ) -> GroupCheck {
        let error =
            |kind, at: u64, message: String| Finding::error(kind, &self.path, message).at(at);
        // The footer's offsets and sizes are signed and untrusted (the parquet
        // crate's own `byte_range` asserts on negative ones).
        let Some(range) = group
            .columns()
            .iter()
            .try_fold((u64::MAX, 0u64), |(lo, hi), c| {
                let start = u64::try_from(super::group::chunk_start(c)).ok()?;
                let len = u64::try_from(c.compressed_size()).ok()?;
                Some((lo.min(start), hi.max(start.saturating_add(len))))
            })
        else {
            findings.push(error(
                FindingKind::BadHeader,
                footer_at,
                format!("row group {i} has a column chunk at a negative offset or of a negative size in the footer"),
            ));
            return GroupCheck::Failed;
        };
        if range.1 > self.len {
            findings.push(
                Finding::error(
                    FindingKind::Truncated,
                    &self.path,
                    format!("row group {i} extends past the end of the file"),
                )
                .range(range.0, range.1),
            );
            return GroupCheck::Failed;
        }
        match file.group_rows(i) {
            Ok(n) => {
                if n != group.num_rows() as u64 {
                    findings.push(
                        Finding::error(
                            FindingKind::Undecodable,
                            &self.path,
                            format!(
                                "row group {i} decodes to {n} rows, its metadata says {}",
                                group.num_rows()
                            ),
                        )
                        .range(range.0, range.1),
                    );
                }
                GroupCheck::Decoded(n)
            }
            Err(ReadError::Damaged(e)) => {
                findings.push(
                    Finding::error(
                        FindingKind::Undecodable,
                        &self.path,
                        format!("row group {i} does not decode: {e}"),
                    )
                    .range(range.0, range.1),
                );
                GroupCheck::Failed
            }
            Err(e) => {
                findings.push(
                    not_checked(&self.path, format!("row group {i} is not checked: {e}"))
                        .range(range.0, range.1),
                );
                GroupCheck::Unchecked
            }
        }
    }
}

impl Inspector for ParquetInspector {
    fn update(&mut self, data: &[u8]) {
        if self.head.len() < 4 {
            let take = (4 - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
        }
        self.tail
            .extend_from_slice(&data[data.len().saturating_sub(8)..]);
        let excess = self.tail.len().saturating_sub(8);
        self.tail.drain(..excess);
        self.len += data.len() as u64;
    }

    fn finish(self: Box<Self>) -> Inspection {
        let mut inspection = Inspection {
            format: "parquet".into(),
            ..Inspection::default()
        };
        let Some((file, footer_len)) = self.open_footer(&mut inspection.findings) else {
            return inspection;
        };
        let footer_at = self.len - 8 - footer_len;
        let metadata = file.metadata().clone();
        let declared: i64 = metadata.file_metadata().num_rows();
        let mut decoded = 0u64;
        let mut unchecked = false;
        for (i, group) in metadata.row_groups().iter().enumerate() {
            match self.check_group(&file, i, group, footer_at, &mut inspection.findings) {
                GroupCheck::Decoded(n) => decoded += n,
                GroupCheck::Failed => {}
                GroupCheck::Unchecked => unchecked = true,
            }
        }
        if unchecked {
            return inspection;
        }
        // Readers read the row groups' rows; the footer's own count is a summary some
        // writers leave 0 (parquet-rs 0.3), which only readers that trust it get wrong.
        if decoded != declared as u64 && inspection.findings.is_empty() {
            inspection.findings.push(
                Finding::warning(
                    FindingKind::BadHeader,
                    &self.path,
                    format!(
                        "the footer declares {declared} rows, its row groups hold {decoded}: pyarrow reads the row groups' {decoded}, readers that trust the footer's count read {declared}"
                    ),
                )
                .at(footer_at),
            );
        }
        inspection.samples = Some(decoded);
        inspection
            .facts
            .insert("rows".into(), Value::from(declared));
        inspection
            .facts
            .insert("row_groups".into(), Value::from(metadata.num_row_groups()));
        inspection
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspect(bytes: &[u8]) -> Inspection {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.parquet"), bytes).unwrap();
        let ctx = FileContext {
            root: dir.path(),
            path: "x.parquet",
            entry: None,
            manifest: None,
        };
        let mut inspector = Box::new(ParquetInspector::new(&ctx));
        inspector.update(bytes);
        inspector.finish()
    }

    /// Found by fuzzing (`parquet`): footers whose schema list declares 143 and 97
    /// million elements, and whose key-value metadata list declares 48 million: parquet
    /// 58 reserved such lists before decoding an element (21 GB, 14 GB, 6 GB;
    /// apache/arrow-rs#9874). parquet 60 bounds them by the footer's size.
    #[test]
    fn a_footer_list_longer_than_the_footer_is_a_finding() {
        for bytes in [
            &include_bytes!("testdata/fuzz-schema-list.parquet")[..],
            &include_bytes!("testdata/fuzz-schema-list-2.parquet")[..],
            &include_bytes!("testdata/fuzz-key-value-list.parquet")[..],
        ] {
            let inspection = inspect(bytes);
            assert!(
                inspection
                    .findings
                    .iter()
                    .any(|f| f.kind == FindingKind::BadHeader
                        && f.message.contains("footer cannot be read")),
                "{:?}",
                inspection.findings
            );
        }
    }

    /// Found by fuzzing (`parquet`): a footer with a negative column chunk offset made
    /// the parquet crate's `byte_range` assert, which ended `verify`. (A negative
    /// dictionary page offset is no offset to pyarrow: the chunk then starts at its data
    /// page, which this footer puts past the end of the file.)
    #[test]
    fn a_negative_column_chunk_offset_is_a_finding() {
        let inspection = inspect(include_bytes!("testdata/fuzz-negative-offset.parquet"));
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::BadHeader
                    && f.message.contains("footer cannot be read")
                    && f.message.contains("outside the file")),
            "{:?}",
            inspection.findings
        );
    }

    /// Found by fuzzing (`parquet`): a damaged definition-level run makes the parquet
    /// crate's decoder assert in `arrow-buffer` ("slice must not be empty"), which ended
    /// `verify` instead of reporting the row group. (The page walk now finds the damage
    /// in a page header after it, before the decoder runs; [`super::guarded`] still
    /// turns the decoder's panics into errors.)
    #[test]
    fn a_panic_of_the_parquet_reader_is_a_finding() {
        let inspection = inspect(include_bytes!("testdata/fuzz-empty-bit-run.parquet"));
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::Undecodable
                    && f.message.contains("row group 0 does not decode")),
            "{:?}",
            inspection.findings
        );
    }

    /// Found by fuzzing (`parquet`): a page header whose skipped field is a list of
    /// two billion doubles. The parquet crate's Thrift decoder skips bytes by copying
    /// them to a sink, which at the end of a plain `File` returns early without an
    /// error, so the list was skipped one empty read at a time: minutes for a 10 KiB
    /// file. Read through `StrictFile`, the end of the file ends the skip.
    #[test]
    fn a_page_header_that_skips_past_the_end_is_a_finding_at_once() {
        let inspection = inspect(include_bytes!("testdata/fuzz-skip-past-end.parquet"));
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::Undecodable
                    && f.message.contains("does not decode")
                    && f.message.contains("page header")),
            "{:?}",
            inspection.findings
        );
    }

    /// Found by fuzzing (`parquet`): a footer with a list of two billion booleans, each
    /// of which the parquet crate skips without consuming a byte (most of a second per
    /// file). The footer walk refuses it: a list longer than the bytes that remain.
    #[test]
    fn a_footer_list_of_booleans_longer_than_the_footer_is_a_finding() {
        let inspection = inspect(include_bytes!("testdata/fuzz-bool-list.parquet"));
        assert!(
            inspection
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::BadHeader
                    && f.message
                        .contains("footer cannot be read: the Parquet footer is malformed")
                    && f.message.contains("elements, only")),
            "{:?}",
            inspection.findings
        );
    }
}
