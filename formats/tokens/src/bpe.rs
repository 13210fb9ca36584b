//! Byte-pair encoding of pre-tokenized pieces with a rank table, as tiktoken does it: the
//! adjacent pair of lowest rank is merged first, the leftmost one on ties, until no pair
//! is a token. Short pieces use a linear scan, long ones a heap (no quadratic time on a
//! long run without spaces). A per-thread cache maps pieces that are not tokens
//! themselves to their ids: text repeats its pieces massively.

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
    pattern: Pattern,
    specials: Vec<(String, Rank)>,
}

/// Slots of the direct-mapped front cache (a power of two; 32 bytes each, so it stays in
/// the core's own cache while the rank table does not).
const FRONT: usize = 1 << 13;

/// A thread's memo: recent short pieces that are one token (direct-mapped, in front of
/// the rank table), and piece → ids for pieces that are not a single token.
pub struct Cache {
    front: Box<[(u128, Rank)]>,
    /// Short pieces → (start, length) of their ids in `ids`.
    short: FxHashMap<u128, (u32, u32)>,
    ids: Vec<Rank>,
    long: FxHashMap<Box<[u8]>, Box<[Rank]>>,
}

impl Default for Cache {
    fn default() -> Self {
        Self {
            front: vec![(0, 0); FRONT].into_boxed_slice(),
            short: FxHashMap::default(),
            ids: Vec::new(),
            long: FxHashMap::default(),
        }
    }
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

    fn clear(&mut self) {
        self.short.clear();
        self.ids.clear();
        self.long.clear();
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
        Self {
            short,
            long,
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
            let (k, rank) = cache.front[slot];
            if k == key {
                out.push(rank);
                return;
            }
            if let Some(&rank) = self.short.get(&key) {
                cache.front[slot] = (key, rank);
                out.push(rank);
                return;
            }
            if let Some(&(start, len)) = cache.short.get(&key) {
                out.extend_from_slice(&cache.ids[start as usize..(start + len) as usize]);
                return;
            }
            let start = out.len();
            self.merge(piece, out);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            let at = cache.ids.len() as u32;
            cache.ids.extend_from_slice(&out[start..]);
            cache.short.insert(key, (at, (out.len() - start) as u32));
            return;
        }
        if let Some(&rank) = self.long.get(piece) {
            out.push(rank);
            return;
        }
        if piece.len() <= CACHE_PIECE {
            if let Some(ids) = cache.long.get(piece) {
                out.extend_from_slice(ids);
                return;
            }
            let start = out.len();
            self.merge(piece, out);
            if cache.len() >= CACHE_ENTRIES {
                cache.clear();
            }
            cache.long.insert(piece.into(), out[start..].into());
        } else {
            self.merge(piece, out);
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
    fn merge(&self, piece: &[u8], out: &mut Vec<Rank>) {
        if piece.len() > HEAP_FROM {
            return self.merge_heap(piece, out);
        }
        // parts[k] = (start of part k, rank of part k joined with part k + 1)
        let mut parts: Vec<(usize, Rank)> = (0..piece.len())
            .map(|i| {
                let pair = piece.get(i..i + 2).map_or(Rank::MAX, |p| self.rank(p));
                (i, pair)
            })
            .collect();
        parts.push((piece.len(), Rank::MAX));
        loop {
            let mut best = (Rank::MAX, 0);
            for (k, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < best.0 {
                    best = (rank, k);
                }
            }
            if best.0 == Rank::MAX {
                break;
            }
            let k = best.1;
            parts.remove(k + 1);
            parts[k].1 = self.span_rank(piece, &parts, k);
            if k > 0 {
                parts[k - 1].1 = self.span_rank(piece, &parts, k - 1);
            }
        }
        for w in parts.windows(2) {
            out.push(self.token(&piece[w[0].0..w[1].0]));
        }
    }

    /// Rank of parts `k` and `k + 1` joined.
    #[inline]
    fn span_rank(&self, piece: &[u8], parts: &[(usize, Rank)], k: usize) -> Rank {
        match parts.get(k + 2) {
            Some(&(end, _)) => self.rank(&piece[parts[k].0..end]),
            None => Rank::MAX,
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
mod tests {
    use super::*;

    /// A toy table: every byte, then merges in rank order.
    fn toy() -> Bpe {
        let mut ranks: Vec<(Vec<u8>, Rank)> = (0..=255u8).map(|b| (vec![b], b as Rank)).collect();
        for (i, m) in ["ab", "bc", "abc", "aa", "aaaa", "cd"].iter().enumerate() {
            ranks.push((m.as_bytes().to_vec(), 256 + i as Rank));
        }
        Bpe::new(ranks, Pattern::R50k, vec![("<|x|>".into(), 999)])
    }

    #[test]
    fn short_keys_are_the_bytes_and_the_length() {
        let mut seen = std::collections::HashSet::new();
        for len in 0..=SHORT {
            let bytes: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            let key = short_key(&bytes);
            let mut want = [0u8; 16];
            want[..len].copy_from_slice(&bytes);
            want[15] = len as u8;
            assert_eq!(key, u128::from_le_bytes(want), "{len}");
            assert!(seen.insert(key));
        }
        assert_ne!(short_key(b"a"), short_key(b"a\0"));
    }

    #[test]
    fn merges_lowest_rank_first_and_leftmost_on_ties() {
        let bpe = toy();
        let mut out = Vec::new();
        bpe.merge(b"abcd", &mut out);
        // "ab" (256) before "bc" (257); then "abc" (258); "cd" can no longer form.
        assert_eq!(out, [258, b'd' as Rank]);
        out.clear();
        bpe.merge(b"aaaaa", &mut out);
        // leftmost "aa" pairs first: aa|aa|a → aaaa|a
        assert_eq!(out, [260, b'a' as Rank]);
    }

    #[test]
    fn heap_and_linear_merges_agree() {
        let bpe = toy();
        let mut state = 7u64;
        for _ in 0..300 {
            let len = 2 + (state % 300) as usize;
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    b"abcd"[(state >> 60) as usize % 4]
                })
                .collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            bpe.merge_heap(&piece, &mut a);
            // the linear scan, whatever the length
            let mut parts: Vec<(usize, Rank)> = (0..piece.len())
                .map(|i| (i, piece.get(i..i + 2).map_or(Rank::MAX, |p| bpe.rank(p))))
                .collect();
            parts.push((piece.len(), Rank::MAX));
            loop {
                let mut best = (Rank::MAX, 0);
                for (k, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
                    if r < best.0 {
                        best = (r, k);
                    }
                }
                if best.0 == Rank::MAX {
                    break;
                }
                parts.remove(best.1 + 1);
                parts[best.1].1 = bpe.span_rank(&piece, &parts, best.1);
                if best.1 > 0 {
                    parts[best.1 - 1].1 = bpe.span_rank(&piece, &parts, best.1 - 1);
                }
            }
            for w in parts.windows(2) {
                b.push(bpe.token(&piece[w[0].0..w[1].0]));
            }
            assert_eq!(a, b, "{}", String::from_utf8_lossy(&piece));
        }
    }

    #[test]
    fn specials_are_split_out_only_when_allowed() {
        let bpe = toy();
        let mut cache = Cache::default();
        let mut out = Vec::new();
        bpe.encode_with_special("ab<|x|>cd", &mut cache, &mut out);
        assert_eq!(out, [256, 999, 261]);
        out.clear();
        bpe.encode_ordinary("<|x|>", &mut cache, &mut out);
        assert!(!out.contains(&999));
    }
}
