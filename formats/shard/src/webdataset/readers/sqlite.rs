//! Energon's `.nv-meta/index.sqlite`: one row per sample (its shard, key, place in the
//! shard, first header and bytes) and one per member (its extension and data), with the
//! tables and indexes `energon prepare` 7.4.1 creates. Built in a temporary file in one
//! transaction (SQLite's page cache bounds the memory, whatever the dataset's size): the
//! same listings give the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use super::listing::{ListedSample, Listing, Part};

/// The tables `energon prepare` creates, in its words (the text SQLite keeps).
pub const TABLES: &[&str] = &[
    "CREATE TABLE samples (\n                    tar_file_id INTEGER NOT NULL,\n                    sample_key TEXT NOT NULL UNIQUE,\n                    sample_index INTEGER NOT NULL,\n                    byte_offset INTEGER,\n                    byte_size INTEGER\n                )",
    "CREATE TABLE sample_parts (\n                    tar_file_id INTEGER,\n                    sample_index INTEGER,\n                    part_name TEXT,\n                    content_byte_offset INTEGER,\n                    content_byte_size INTEGER\n                )",
];

/// The indexes `energon prepare` creates (once every row is in; ours before).
pub const INDEXES: &[&str] = &[
    "CREATE INDEX idx_samples_by_tar_and_idx ON samples(tar_file_id, sample_index)",
    "CREATE INDEX idx_sample_parts_seq ON sample_parts(tar_file_id, sample_index, content_byte_offset)",
    "CREATE INDEX idx_sample_parts_full ON sample_parts(tar_file_id, sample_index, part_name, content_byte_offset, content_byte_size)",
];

/// Why the index could not be built or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// Two samples have the same key: Energon's index keys samples uniquely.
    #[error(
        "sample key `{key}` appears twice (the second time in shard `{shard}`): Energon's index.sqlite needs every key to be unique across the dataset"
    )]
    DuplicateKey {
        /// The key.
        key: String,
        /// The shard of its second appearance.
        shard: String,
    },
    /// A member name DALI's index cannot hold (its fields are separated by spaces).
    #[error(
        "member `{name}` of shard `{shard}` has white space in its name: DALI's index separates its fields with spaces and cannot list it; rename the member or leave out dali"
    )]
    DaliName {
        /// The shard.
        shard: String,
        /// The member's name.
        name: String,
    },
    /// The temporary file of the index could not be made.
    #[error("making a temporary file in `{dir}` for Energon's index.sqlite: {source}")]
    Temp {
        /// Where.
        dir: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("{what}: {source}")]
    Sqlite {
        /// What was being done.
        what: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

fn sql(what: &str) -> impl FnOnce(rusqlite::Error) -> SqliteError + '_ {
    move |source| SqliteError::Sqlite {
        what: what.to_string(),
        source,
    }
}

/// Builds the index of the shards, in `tar_file_id` order (`shards` gives each one's
/// name, for errors, and its listing), one shard at a time: the caller's iterator may
/// make each listing as it goes.
pub struct IndexBuilder {
    conn: Connection,
    file: tempfile::NamedTempFile,
    next_id: i64,
}

impl IndexBuilder {
    /// An empty index with Energon's schema, in a temporary file in `dir`.
    pub fn new(dir: &Path) -> Result<Self, SqliteError> {
        let file = tempfile::Builder::new()
            .prefix(".index-sqlite-")
            .tempfile_in(dir)
            .map_err(|e| SqliteError::Temp {
                dir: dir.to_path_buf(),
                source: e,
            })?;
        let conn = Connection::open(file.path()).map_err(sql("creating the index"))?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536; BEGIN;",
        )
        .map_err(sql("setting up the index"))?;
        // The indexes right after the tables (the order `energon prepare` leaves in the
        // schema), kept up to date by each insert: the rows go in while later shards are
        // written, and nothing is left to sort at the end.
        for statement in TABLES.iter().chain(INDEXES) {
            conn.execute(statement, [])
                .map_err(sql("creating the index's tables"))?;
        }
        Ok(Self {
            conn,
            file,
            next_id: 0,
        })
    }

    /// Adds the samples of the next shard, `name` (named in errors).
    pub fn add(&mut self, name: &str, listing: &Listing) -> Result<(), SqliteError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut samples = self
            .conn
            .prepare_cached(
                "INSERT INTO samples (tar_file_id, sample_key, sample_index, byte_offset, byte_size) VALUES (?, ?, ?, ?, ?)",
            )
            .map_err(sql("preparing the inserts"))?;
        let mut parts = self
            .conn
            .prepare_cached(
                "INSERT INTO sample_parts (tar_file_id, sample_index, part_name, content_byte_offset, content_byte_size) VALUES (?, ?, ?, ?, ?)",
            )
            .map_err(sql("preparing the inserts"))?;
        for (i, sample) in listing.samples.iter().enumerate() {
            let size = listing.sample_size(i);
            match samples.execute(params![
                id,
                sample.key,
                i as i64,
                sample.start as i64,
                size as i64
            ]) {
                Ok(_) => {}
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    return Err(SqliteError::DuplicateKey {
                        key: sample.key.clone(),
                        shard: name.to_string(),
                    });
                }
                Err(e) => return Err(sql("adding a sample")(e)),
            }
            for part in &sample.parts {
                parts
                    .execute(params![
                        id,
                        i as i64,
                        part.ext,
                        part.data_at as i64,
                        part.size as i64
                    ])
                    .map_err(sql("adding a sample's part"))?;
            }
        }
        Ok(())
    }

    /// The database file, complete and closed.
    pub fn finish(self) -> Result<tempfile::NamedTempFile, SqliteError> {
        self.conn
            .execute_batch("COMMIT;")
            .map_err(sql("committing the index"))?;
        self.conn
            .close()
            .map_err(|(_, e)| sql("closing the index")(e))?;
        Ok(self.file)
    }
}

/// Reads an `index.sqlite` back: each shard's listing (by `tar_file_id`), as `verify`
/// compares it with the shard.
pub fn read_listings(path: &Path) -> Result<BTreeMap<i64, Listing>, SqliteError> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(sql("opening the index"))?;
    let mut out: BTreeMap<i64, Listing> = BTreeMap::new();
    let mut samples = conn
        .prepare("SELECT tar_file_id, sample_key, byte_offset, byte_size FROM samples ORDER BY tar_file_id, sample_index")
        .map_err(sql("reading the samples"))?;
    let rows = samples
        .query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<i64>>(2)?.unwrap_or(0),
                row.get::<_, Option<i64>>(3)?.unwrap_or(0),
            ))
        })
        .map_err(sql("reading the samples"))?;
    for row in rows {
        let (id, key, start, size) = row.map_err(sql("reading a sample"))?;
        let listing = out.entry(id).or_default();
        listing.samples.push(ListedSample {
            key,
            start: start as u64,
            parts: Vec::new(),
        });
        listing.end = start.saturating_add(size) as u64;
    }
    let mut parts = conn
        .prepare("SELECT tar_file_id, sample_index, part_name, content_byte_offset, content_byte_size FROM sample_parts ORDER BY tar_file_id, sample_index, content_byte_offset")
        .map_err(sql("reading the parts"))?;
    let rows = parts
        .query_map([], |row| {
            Ok((
                row.get::<_, Option<i64>>(0)?.unwrap_or(-1),
                row.get::<_, Option<i64>>(1)?.unwrap_or(-1),
                row.get::<_, Option<String>>(2)?.unwrap_or_default(),
                row.get::<_, Option<i64>>(3)?.unwrap_or(0),
                row.get::<_, Option<i64>>(4)?.unwrap_or(0),
            ))
        })
        .map_err(sql("reading the parts"))?;
    for row in rows {
        let (id, index, ext, data_at, size) = row.map_err(sql("reading a part"))?;
        let sample = out
            .get_mut(&id)
            .and_then(|listing| listing.samples.get_mut(usize::try_from(index).ok()?));
        if let Some(sample) = sample {
            sample.parts.push(Part {
                ext,
                data_at: data_at as u64,
                size: size as u64,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(keys: &[&str]) -> Listing {
        let mut listing = Listing::default();
        let mut pos = 0;
        for key in keys {
            listing.member(&format!("{key}.jpg"), pos, pos + 512, 10);
            listing.member(&format!("{key}.cls"), pos + 1024, pos + 1536, 1);
            pos += 2048;
        }
        listing.end = pos;
        listing
    }

    #[test]
    fn the_same_listings_give_the_same_bytes_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let build = || {
            let mut builder = IndexBuilder::new(dir.path()).unwrap();
            builder.add("a.tar", &listing(&["k1", "k2"])).unwrap();
            builder.add("b.tar", &listing(&["k3"])).unwrap();
            std::fs::read(builder.finish().unwrap().path()).unwrap()
        };
        let bytes = build();
        assert_eq!(bytes, build());
        let path = dir.path().join("index.sqlite");
        std::fs::write(&path, &bytes).unwrap();
        let back = read_listings(&path).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[&0], listing(&["k1", "k2"]));
        assert_eq!(back[&1], listing(&["k3"]));
    }

    #[test]
    fn a_key_twice_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut builder = IndexBuilder::new(dir.path()).unwrap();
        builder.add("a.tar", &listing(&["k1"])).unwrap();
        let err = builder.add("b.tar", &listing(&["k1"])).unwrap_err();
        assert!(
            err.to_string().contains("`k1`") && err.to_string().contains("b.tar"),
            "{err}"
        );
    }
}
