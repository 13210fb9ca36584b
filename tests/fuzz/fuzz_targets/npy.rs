//! `.npy` files as inputs of MDS `ndarray` columns: the header (versions 1-3, dtype,
//! order, shape) parsed from the peeked head, the stored size predicted, and the value
//! re-framed. The first byte picks the column's declared dtype and shape.
#![no_main]
use libfuzzer_sys::fuzz_target;
use shardsmith_shard::columns::Encoding;

const ENCODINGS: [&str; 5] = [
    "ndarray",
    "ndarray:uint8",
    "ndarray:float32",
    "ndarray:int64:2,3",
    "ndarray:float16:1",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, file)) = data.split_first() else {
        return;
    };
    let encoding = Encoding::parse(ENCODINGS[usize::from(pick) % ENCODINGS.len()])
        .expect("the listed encodings parse");
    let head = &file[..file.len().min(encoding.peek_len())];
    let predicted = encoding.encoded_len(file.len() as u64, head);
    if let Ok(stored) = encoding.encode(file) {
        // pack plans shard sizes from the prediction: it must be exact.
        if let Ok(predicted) = predicted {
            assert_eq!(
                predicted,
                stored.len() as u64,
                "encoded_len predicts the stored size"
            );
        }
        let _ = encoding.convert(file);
    }
});
