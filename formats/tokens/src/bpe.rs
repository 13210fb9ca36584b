//! Byte-pair encoding of pre-tokenized pieces with a rank table, as tiktoken does it: the
//! adjacent pair of lowest rank is merged first, the leftmost one on ties, until no pair
//! is a token. Short pieces use a linear scan, long ones a heap (no quadratic time on a
//! long run without spaces). A per-thread cache maps pieces that are not tokens
//! themselves to their ids: text repeats its pieces massively.
//!
//! The hot path copies no id slices: a piece's ids are pushed one by one (nearly every
//! piece has 1 to 4), since a `memcpy` call per piece costs more than the copy (and musl's
//! `memcpy`, `rep movsq`, much more), and merging shifts no arrays and allocates nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use super::pretok::Pattern;

/// Token id.
pub type Rank = u32;

/// Pieces longer than this are merged with a heap.
const HEAP_FROM: usize = 128;
/// Most pieces a thread's cache holds before it starts over (bounds its memory to
/// roughly 100 bytes per entry).
const CACHE_ENTRIES: usize = 1 << 17;
/// Pieces longer than this are not cached.
const CACHE_PIECE: usize = 64;

/// Byte strings up to this length are looked up as one integer ([`short_key`]): no
/// slice hashing, no `memcmp`. Nearly every piece and every merge candidate is this short.
const SHORT: usize = 15;

/// A byte string of at most [`SHORT`] bytes as an integer: the bytes, then the length in
/// the top byte (so `"a"` and `"a\0"` differ).
#[inline(always)]
fn short_key(bytes: &[u8]) -> u128 {
    debug_assert!(bytes.len() <= SHORT);
    let len = bytes.len();
    let (lo, hi) = if len > 8 {
        (
            u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
            load_le(&bytes[8..]),
        )
    } else {
        (load_le(bytes), 0)
    };
    u128::from(lo) | (u128::from(hi) << 64) | ((len as u128) << 120)
}

/// Up to 8 bytes as a little-endian integer, with two overlapping fixed-size loads
/// instead of a variable-length copy (which costs a call and a store-forwarding stall
/// on the hottest path of the tokenizer).
#[inline(always)]
fn load_le(b: &[u8]) -> u64 {
    let len = b.len();
    if len >= 4 {
        let lo = u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes")));
        let hi = u64::from(u32::from_le_bytes(
            b[len - 4..].try_into().expect("4 bytes"),
        ));
        lo | (hi << ((len - 4) * 8))
    } else if len >= 2 {
        let lo = u64::from(u16::from_le_bytes([b[0], b[1]]));
        let hi = u64::from(u16::from_le_bytes([b[len - 2], b[len - 1]]));
        lo | (hi << ((len - 2) * 8))
    } else if len == 1 {
        u64::from(b[0])
    } else {
        0
    }
}

/// A byte-level BPE: mergeable ranks, the split pattern and the special tokens.
pub struct Bpe {
    short: FxHashMap<u128, Rank>,
    long: FxHashMap<Box<[u8]>, Rank>,
    /// The id of each single byte (`Rank::MAX` if it has none).
    bytes: Box<[Rank; 256]>,
    pattern: Pattern,
    specials: Vec<(String, Rank)>,
}

/// Slots of the direct-mapped front cache (a power of two; 32 bytes each, so it stays in
/// the core's own cache while the rank table does not).
const FRONT: usize = 1 << 13;
/// Ids a front slot holds (the slot's key is 16-byte aligned: four ids fit in its 32
/// bytes).
const FRONT_IDS: usize = 4;

/// A front slot: a short piece's key and its 1 to [`FRONT_IDS`] ids, `Rank::MAX` after
/// the last.
type Slot = (u128, [Rank; FRONT_IDS]);

/// A thread's memo: recent short pieces of up to [`FRONT_IDS`] ids (direct-mapped, in
/// front of the rank table and `short`), and piece → ids for pieces that are not a
/// single token.
pub struct Cache {
    front: Box<[Slot]>,
    /// Short pieces → (start, length) of their ids in `ids`.
    short: FxHashMap<u128, (u32, u32)>,
    /// Longer pieces → (start, length) of their ids in `ids`.
    long: FxHashMap<Box<[u8]>, (u32, u32)>,
    ids: Vec<Rank>,
    /// The parts of the piece being merged (reused).
    parts: Vec<Part>,
}

impl Default for Cache {
    fn default() -> Self {
        Self {
            // Key 0 is the empty piece, which is never looked up.
            front: vec![(0, [Rank::MAX; FRONT_IDS]); FRONT].into_boxed_slice(),
            short: FxHashMap::default(),
            long: FxHashMap::default(),
            ids: Vec::new(),
            parts: Vec::new(),
        }
    }
}

/// A part of a piece being merged, kept at its first byte's index: the index of the next
/// part (the piece's length after the last), the part's own id, and the rank of the part
/// joined with the next one (`Rank::MAX` if that is no token, or when merged away).
#[derive(Clone, Copy)]
struct Part {
    next: u32,
    id: Rank,
    pair: Rank,
}

/// Ids up to which [`push_ids`] pushes one by one rather than calling `memcpy`.
const PUSH_IDS: usize = 16;

/// Appends `ids` one by one when there are few (up to [`PUSH_IDS`]): `extend_from_slice`
/// would call `memcpy` for a few bytes.
#[inline(always)]
fn push_ids(out: &mut Vec<Rank>, ids: &[Rank]) {
    match *ids {
        [a] => out.push(a),
        [a, b] => {
            out.push(a);
            out.push(b);
        }
        [a, b, c] => {
            out.push(a);
            out.push(b);
            out.push(c);
        }
        [a, b, c, d] => {
            out.push(a);
            out.push(b);
            out.push(c);
            out.push(d);
        }
        _ if ids.len() <= PUSH_IDS => {
            out.reserve(ids.len());
            for &id in ids {
                out.push(id);
            }
        }
        _ => out.extend_from_slice(ids),
    }
}

/// The front slot's ids for `ids`, if they fit.
#[inline(always)]
fn front_ids(ids: &[Rank]) -> Option<[Rank; FRONT_IDS]> {
    const NO: Rank = Rank::MAX;
    Some(match *ids {
        [a] => [a, NO, NO, NO],
        [a, b] => [a, b, NO, NO],
        [a, b, c] => [a, b, c, NO],
        [a, b, c, d] => [a, b, c, d],
        _ => return None,
    })
}

#[inline(always)]
fn front_slot(key: u128) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - FRONT.trailing_zeros())) as usize
}

impl Cache {
    fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// Starts over (the front slots stay: they hold no positions in `ids`).
    fn clear(&mut self) {
        self.short.clear();
        self.ids.clear();
        self.long.clear();
    }

    /// Records `ids` as the ids of a piece; returns their (start, length) in `ids`.
    #[inline]
    fn store(&mut self, ids: &[Rank]) -> (u32, u32) {
        let at = self.ids.len() as u32;
        push_ids(&mut self.ids, ids);
        (at, ids.len() as u32)
    }
}

impl Bpe {
    /// A BPE from `(bytes, rank)` pairs.
    pub fn new(
        ranks: impl IntoIterator<Item = (Vec<u8>, Rank)>,
        pattern: Pattern,
        specials: Vec<(String, Rank)>,
    ) -> Self {
        let ranks = ranks.into_iter();
        let mut short =
            FxHashMap::with_capacity_and_hasher(ranks.size_hint().0, Default::default());
        let mut long = FxHashMap::default();
        for (bytes, rank) in ranks {
            if bytes.len() <= SHORT {
                short.insert(short_key(&bytes), rank);
            } else {
                long.insert(bytes.into_boxed_slice(), rank);
            }
        }
        let mut bytes = Box::new([Rank::MAX; 256]);
        for (b, id) in bytes.iter_mut().enumerate() {
            if let Some(&rank) = short.get(&short_key(&[b as u8])) {
                *id = rank;
            }
        }
        Self {
            short,
            long,
            bytes,
            pattern,
            specials,
        }
    }

    /// Number of mergeable ranks.
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// True when there are no ranks.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The special tokens.
    pub fn specials(&self) -> &[(String, Rank)] {
        &self.specials
    }

    /// Appends the ids of `text` to `out`, special-token text encoded as ordinary text
    /// (tiktoken's `encode_ordinary`).
    pub fn encode_ordinary(&self, text: &str, cache: &mut Cache, out: &mut Vec<Rank>) {
        self.pattern.split(text, |piece| {
            self.encode_piece(piece.as_bytes(), cache, out)
        });
    }

    /// Appends the ids of `text`, with special tokens in the text encoded as themselves
    /// (tiktoken's `encode(text, allowed_special="all")`).
    pub fn encode_with_special(&self, mut text: &str, cache: &mut Cache, out: &mut Vec<Rank>) {
        loop {
            let next = self
                .specials
                .iter()
                .filter_map(|(s, id)| text.find(s.as_str()).map(|at| (at, Reverse(s.len()), *id)))
                .min();
            match next {
                Some((at, Reverse(len), id)) => {
                    self.encode_ordinary(&text[..at], cache, out);
                    out.push(id);
                    text = &text[at + len..];
                }
                None => return self.encode_ordinary(text, cache, out),
            }
        }
    }

    #[inline]
    fn encode_piece(&self, piece: &[u8], cache: &mut Cache, out: &mut Vec<Rank>) {
        if piece.len() <= SHORT {
            let key = short_key(piece);
            let slot = front_slot(key);
            let (k, ids) = cache.front[slot];
            if k == key {
                out.push(ids[0]);
                for &id in &ids[1..] {
                    if id == Rank::MAX {
                        break;
                    }
                    out.push(id);
                }
                return;
            }
            if let Some(&rank) = self.short.get(&key) {
                cache.front[slot] = (key, [rank, Rank::MAX, Rank::MAX, Rank::MAX]);
                out.push(rank);
                return;
            }
            let start = out.len();
            if let Some(&(at, len)) = cache.short.get(&key) {
                push_ids(out, &cache.ids[at as usize..(at + len) as usize]);
            } else {
                self.merge(piece, &mut cache.parts, out);
                if cache.len() >= CACHE_ENTRIES {
                    cache.clear();
                }
                let span = cache.store(&out[start..]);
                cache.short.insert(key, span);
            }
            if let Some(ids) = front_ids(&out[start..]) {
                cache.front[slot] = (key, ids);
            }
            return;
        }
        if let Some(&rank) = self.long.get(piece) {
            out.push(rank);
            return;
        }
        if piece.len() <= CACHE_PIECE {
            if let Some(&(at, len)) = cache.long.get(piece) {
                push_ids(out, &cache.ids[at as usize..(at + len) as usize]);
                return;
            }
            let start = out.len();
            self.merge(piece, &mut cache.parts, out);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            let span = cache.store(&out[start..]);
            cache.long.insert(piece.into(), span);
        } else {
            self.merge(piece, &mut cache.parts, out);
        }
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> Rank {
        let found = if bytes.len() <= SHORT {
            self.short.get(&short_key(bytes))
        } else {
            self.long.get(bytes)
        };
        found.copied().unwrap_or(Rank::MAX)
    }

    /// The BPE merge of one piece (at least two bytes, not itself a token).
    fn merge(&self, piece: &[u8], parts: &mut Vec<Part>, out: &mut Vec<Rank>) {
        if piece.len() > HEAP_FROM {
            return self.merge_heap(piece, out);
        }
        self.merge_scan(piece, parts, out);
    }

    /// The merge with a linear scan for the lowest pair rank each round, over a linked
    /// list of parts (no parts are shifted when one is merged into its predecessor).
    fn merge_scan(&self, piece: &[u8], parts: &mut Vec<Part>, out: &mut Vec<Rank>) {
        let n = piece.len();
        parts.clear();
        parts.extend((0..n).map(|i| Part {
            next: i as u32 + 1,
            id: self.bytes[piece[i] as usize],
            pair: piece.get(i..i + 2).map_or(Rank::MAX, |p| self.rank(p)),
        }));
        loop {
            // The lowest pair rank, the leftmost on ties, and the part before it.
            let (mut best, mut at, mut before) = (Rank::MAX, 0, usize::MAX);
            let (mut prev, mut i) = (usize::MAX, 0);
            while i < n {
                let part = parts[i];
                if part.pair < best {
                    (best, at, before) = (part.pair, i, prev);
                }
                prev = i;
                i = part.next as usize;
            }
            if best == Rank::MAX {
                break;
            }
            // Part `at` takes in the next one; its id is the pair's rank.
            let after = parts[parts[at].next as usize].next as usize;
            parts[at].next = after as u32;
            parts[at].id = best;
            parts[at].pair = match parts.get(after) {
                Some(next) => self.rank(&piece[at..next.next as usize]),
                None => Rank::MAX,
            };
            if before != usize::MAX {
                parts[before].pair = self.rank(&piece[before..after]);
            }
        }
        let mut i = 0;
        while i < n {
            let part = parts[i];
            assert!(part.id != Rank::MAX, "a BPE part is not in the rank table");
            out.push(part.id);
            i = part.next as usize;
        }
    }

    /// A part left after merging is always a token (every byte is one).
    fn token(&self, bytes: &[u8]) -> Rank {
        let rank = self.rank(bytes);
        assert!(rank != Rank::MAX, "a BPE part is not in the rank table");
        rank
    }

    /// The same merge order with a heap of (rank, start) and a linked list of parts.
    fn merge_heap(&self, piece: &[u8], out: &mut Vec<Rank>) {
        let n = piece.len();
        // Parts are identified by their start; next[i] is the start of the following
        // part (n at the end), prev[i] the preceding one.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut pair_rank = vec![Rank::MAX; n];
        let mut heap = BinaryHeap::with_capacity(n);
        let pair_of = |next: &[usize], i: usize| -> Rank {
            let j = next[i];
            if j >= n || next[j] > n {
                return Rank::MAX;
            }
            self.rank(&piece[i..next[j]])
        };
        for i in 0..n - 1 {
            pair_rank[i] = self.rank(&piece[i..i + 2]);
            if pair_rank[i] != Rank::MAX {
                heap.push(Reverse((pair_rank[i], i)));
            }
        }
        while let Some(Reverse((rank, i))) = heap.pop() {
            if !alive[i] || pair_rank[i] != rank {
                continue;
            }
            let j = next[i];
            alive[j] = false;
            next[i] = next[j];
            if next[i] < n {
                prev[next[i]] = i;
            }
            pair_rank[i] = pair_of(&next, i);
            if pair_rank[i] != Rank::MAX {
                heap.push(Reverse((pair_rank[i], i)));
            }
            let p = prev[i];
            if p != usize::MAX {
                pair_rank[p] = pair_of(&next, p);
                if pair_rank[p] != Rank::MAX {
                    heap.push(Reverse((pair_rank[p], p)));
                }
            }
        }
        let mut i = 0;
        while i < n {
            out.push(self.token(&piece[i..next[i]]));
            i = next[i];
        }
    }
}

#[cfg(test)]
#[path = "bpe_tests.rs"]
mod tests;
