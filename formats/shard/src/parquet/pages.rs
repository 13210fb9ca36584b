//! The pages of one column chunk, walked by their headers before any page is read:
//! where the chunk really ends, how large its pages decompress, what its dictionary
//! holds at most.
//!
//! pyarrow (Arrow C++) reads a chunk's pages until it has the number of values its
//! metadata declares; the parquet crate reads until the chunk's declared byte length
//! runs out. Files from other writers differ there (parquet-mr 1.2.8 and older leave the
//! dictionary page header out of the chunk's size; others pad). Walking the headers
//! finds the end pyarrow finds, so the chunk handed to the parquet crate is exactly the
//! pages pyarrow reads. The walk reads headers only (a few hundred bytes per page): a
//! page's declared sizes are known before it is decompressed, so a small file that
//! declares gigabytes is refused before it costs them.

use super::footer::{BOOL_FALSE, BOOL_TRUE, I32, STRUCT, ThriftError, Walk};
use super::strict::StrictFile;

/// Largest page header read (pyarrow's own limit, `kDefaultMaxPageHeaderSize`).
const MAX_HEADER: usize = 16 << 20;

/// Page types (parquet.thrift `PageType`).
const DATA_PAGE: i64 = 0;
const DICTIONARY_PAGE: i64 = 2;
const DATA_PAGE_V2: i64 = 3;

/// What the walk needs of a page header.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Header {
    kind: i64,
    uncompressed: i64,
    compressed: i64,
    /// Values of a data page (levels included) or entries of a dictionary page.
    values: i64,
}

/// Why the pages of a column chunk cannot be walked; each names its byte offset in the
/// file.
#[derive(Debug, thiserror::Error)]
pub(super) enum PageError {
    /// The chunk ends before its pages hold the values the footer declares.
    #[error("the column chunk ends at byte {limit} after {seen} of its {values} values")]
    ChunkEnds { limit: u64, seen: i64, values: i64 },
    /// A page's body runs past the end of its chunk.
    #[error(
        "the page at byte {at} declares {len} bytes, past the end of its column chunk at byte {limit}"
    )]
    PastChunk { at: u64, len: i64, limit: u64 },
    /// A dictionary page that is not the chunk's first page.
    #[error("a second dictionary page, or one after data pages, at byte {at}")]
    SecondDictionary { at: u64 },
    /// The header's bytes cannot be read.
    #[error("the page header at byte {at} cannot be read: {error}")]
    Unreadable { at: u64, error: std::io::Error },
    /// The header's bytes are not a page header.
    #[error("the page header at byte {at} is malformed: {error}")]
    Malformed { at: u64, error: HeaderError },
    /// The header is longer than any reader reads.
    #[error("the page header at byte {at} is longer than {MAX_HEADER} bytes (pyarrow's limit too)")]
    TooLong { at: u64 },
    /// The header runs past the end of its chunk.
    #[error("the page header at byte {at} runs past the end of its column chunk at byte {limit}")]
    PastEnd { at: u64, limit: u64 },
}

/// Why bytes are not a page header.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum HeaderError {
    /// Not Thrift.
    #[error(transparent)]
    Thrift(#[from] ThriftError),
    /// Thrift, without the fields every page header has.
    #[error("a page header without its type or sizes, or with a negative one ({0:?})")]
    Incomplete(Header),
}

/// Parses a page header from the start of `bytes`: the header and its length, `Ok(None)`
/// when `bytes` ends inside it.
fn header(bytes: &[u8]) -> Result<Option<(Header, usize)>, HeaderError> {
    let mut walk = Walk::new(bytes);
    match fields(&mut walk) {
        Ok(h) => Ok(Some((h, walk.at))),
        Err(_) if walk.short => Ok(None),
        Err(e) => Err(e),
    }
}

fn fields(walk: &mut Walk<'_>) -> Result<Header, HeaderError> {
    let mut h = Header {
        kind: -1,
        uncompressed: -1,
        compressed: -1,
        values: 0,
    };
    let mut last = 0;
    while let Some((id, kind)) = walk.field(last)? {
        last = id;
        match (id, kind) {
            (1, I32) => h.kind = walk.int()?,
            (2, I32) => h.uncompressed = walk.int()?,
            (3, I32) => h.compressed = walk.int()?,
            // data_page_header, dictionary_page_header, data_page_header_v2: field 1
            // is num_values in each.
            (5 | 7 | 8, STRUCT) => {
                let mut inner = 0;
                while let Some((id, kind)) = walk.field(inner)? {
                    inner = id;
                    match (id, kind) {
                        (1, I32) => h.values = walk.int()?,
                        (_, BOOL_TRUE | BOOL_FALSE) => {}
                        (_, kind) => walk.value(kind, 2)?,
                    }
                }
            }
            (_, BOOL_TRUE | BOOL_FALSE) => {}
            (_, kind) => walk.value(kind, 1)?,
        }
    }
    if h.kind < 0 || h.uncompressed < 0 || h.compressed < 0 || h.values < 0 {
        return Err(HeaderError::Incomplete(h));
    }
    Ok(h)
}

/// A dictionary page: where its header starts, and its sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dictionary {
    pub offset: u64,
    /// Header and compressed body.
    pub len: u64,
    pub uncompressed: u64,
    pub entries: u64,
}

/// The pages of a column chunk as pyarrow reads them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Chunk {
    /// The byte after the last page pyarrow reads.
    pub end: u64,
    /// The dictionary page, when the chunk starts with one.
    pub dictionary: Option<Dictionary>,
    /// The largest data page, decompressed.
    pub max_page: u64,
    /// The fewest values of a data page (0 without data pages).
    pub min_page_values: u64,
    /// Data pages.
    pub pages: u64,
}

/// Walks the page headers of a chunk whose first page is at `start`, whose pages lie
/// before `limit` and which holds `values` values, until it has them (as pyarrow does).
pub(super) fn walk(
    file: &StrictFile,
    start: u64,
    limit: u64,
    values: i64,
) -> Result<Chunk, PageError> {
    let mut chunk = Chunk {
        end: start,
        ..Chunk::default()
    };
    let mut seen = 0i64;
    let mut at = start;
    while seen < values {
        if at >= limit {
            return Err(PageError::ChunkEnds {
                limit,
                seen,
                values,
            });
        }
        let (h, header_len) = read_header(file, at, limit)?;
        let body = at + header_len as u64;
        let end = body
            .checked_add(h.compressed as u64)
            .filter(|&e| e <= limit)
            .ok_or(PageError::PastChunk {
                at,
                len: h.compressed,
                limit,
            })?;
        match h.kind {
            DICTIONARY_PAGE if chunk.dictionary.is_none() && chunk.pages == 0 => {
                chunk.dictionary = Some(Dictionary {
                    offset: at,
                    len: end - at,
                    uncompressed: h.uncompressed as u64,
                    entries: h.values as u64,
                });
            }
            DICTIONARY_PAGE => {
                return Err(PageError::SecondDictionary { at });
            }
            DATA_PAGE | DATA_PAGE_V2 => {
                seen = seen.saturating_add(h.values);
                chunk.max_page = chunk.max_page.max(h.uncompressed as u64);
                chunk.min_page_values = if chunk.pages == 0 {
                    h.values as u64
                } else {
                    chunk.min_page_values.min(h.values as u64)
                };
                chunk.pages += 1;
            }
            // Index pages and page types a newer writer may add: readers skip them.
            _ => {}
        }
        at = end;
        chunk.end = end;
    }
    Ok(chunk)
}

/// The page header at `at` (before `limit`) and its length, read in growing prefixes.
fn read_header(file: &StrictFile, at: u64, limit: u64) -> Result<(Header, usize), PageError> {
    let most = usize::try_from(limit - at)
        .unwrap_or(usize::MAX)
        .min(MAX_HEADER);
    let mut want = 256.min(most);
    loop {
        let bytes = file
            .read_upto(at, want)
            .map_err(|error| PageError::Unreadable { at, error })?;
        match header(&bytes) {
            Ok(Some(found)) => return Ok(found),
            Err(error) => return Err(PageError::Malformed { at, error }),
            Ok(None) if want < most => want = (want * 8).min(most),
            Ok(None) if most == MAX_HEADER => {
                return Err(PageError::TooLong { at });
            }
            Ok(None) => {
                return Err(PageError::PastEnd { at, limit });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_prefixes_ask_for_more() {
        // type DATA_PAGE(0), uncompressed 100, compressed 50, data_page_header {
        // num_values 7, encoding 0, def 3, rep 3 }.
        let bytes = [
            0x15, 0x00, 0x15, 0xc8, 0x01, 0x15, 0x64, 0x2c, 0x15, 0x0e, 0x15, 0x00, 0x15, 0x06,
            0x15, 0x06, 0x00, 0x00, 0xff,
        ];
        let (h, len) = header(&bytes).unwrap().unwrap();
        assert_eq!(
            h,
            Header {
                kind: 0,
                uncompressed: 100,
                compressed: 50,
                values: 7
            }
        );
        assert_eq!(len, 18);
        for cut in 0..18 {
            assert_eq!(header(&bytes[..cut]), Ok(None), "{cut}");
        }
        // A header without its sizes, and one with a negative size.
        assert!(header(&[0x15, 0x00, 0x00]).is_err());
        assert!(header(&[0x15, 0x00, 0x15, 0x01, 0x15, 0x02, 0x00]).is_err());
    }
}
