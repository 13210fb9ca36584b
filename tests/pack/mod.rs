//! `pack`: each shard format end to end (`basic` for what they share, `conformance` for
//! the assertions every format passes), images, conversions of datasets, inputs other
//! tools wrote, and each format read back by its real readers (`*_interop`).

mod basic;
mod big_trees;
mod conformance;
mod convert;
mod convert_interop;
mod dedup;
mod hf;
mod hf_interop;
mod images;
mod images_interop;
mod left_out;
mod litdata;
mod litdata_interop;
mod litdata_stored;
mod mds;
mod mds_interop;
mod merge_parts;
mod parquet;
mod parquet_interop;
mod parquet_readers;
mod reader_indexes;
mod reader_indexes_interop;
mod tar_gnu;
mod wds_compressed;
mod wds_compressed_interop;
mod webdataset_interop;
mod wids_index;
mod wids_index_interop;
