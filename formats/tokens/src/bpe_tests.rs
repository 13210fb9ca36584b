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

/// The merge as tiktoken writes it: a vector of parts, the merged one removed.
fn reference_merge(bpe: &Bpe, piece: &[u8]) -> Vec<Rank> {
    let span_rank = |parts: &[(usize, Rank)], k: usize| match parts.get(k + 2) {
        Some(&(end, _)) => bpe.rank(&piece[parts[k].0..end]),
        None => Rank::MAX,
    };
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
        parts[best.1].1 = span_rank(&parts, best.1);
        if best.1 > 0 {
            parts[best.1 - 1].1 = span_rank(&parts, best.1 - 1);
        }
    }
    parts
        .windows(2)
        .map(|w| bpe.token(&piece[w[0].0..w[1].0]))
        .collect()
}

#[test]
fn merges_lowest_rank_first_and_leftmost_on_ties() {
    let bpe = toy();
    let mut parts = Vec::new();
    let mut out = Vec::new();
    bpe.merge(b"abcd", &mut parts, &mut out);
    // "ab" (256) before "bc" (257); then "abc" (258); "cd" can no longer form.
    assert_eq!(out, [258, b'd' as Rank]);
    out.clear();
    bpe.merge(b"aaaaa", &mut parts, &mut out);
    // leftmost "aa" pairs first: aa|aa|a → aaaa|a
    assert_eq!(out, [260, b'a' as Rank]);
}

#[test]
fn scan_heap_and_reference_merges_agree() {
    let bpe = toy();
    let mut parts = Vec::new();
    let mut state = 7u64;
    for round in 0..600 {
        let len = 2 + (state % if round % 2 == 0 { 300 } else { 12 }) as usize;
        let piece: Vec<u8> = (0..len)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                b"abcd"[(state >> 60) as usize % 4]
            })
            .collect();
        let want = reference_merge(&bpe, &piece);
        let (mut heap, mut scan) = (Vec::new(), vec![7]);
        bpe.merge_heap(&piece, &mut heap);
        // the linear scan, whatever the length, appending after what `out` holds
        bpe.merge_scan(&piece, &mut parts, &mut scan);
        let text = String::from_utf8_lossy(&piece);
        assert_eq!(heap, want, "{text}");
        assert_eq!(scan[0], 7);
        assert_eq!(scan[1..], want, "{text}");
    }
}

#[test]
fn cached_pieces_of_any_length_give_the_same_ids() {
    let bpe = toy();
    let mut cache = Cache::default();
    let text = "abcd aaaaa abcdabcdabcdabcd abcdabcdabcdabcdabcdabcdabcdabcdabcdabcdab \
                cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd ab a";
    let mut first = Vec::new();
    bpe.encode_ordinary(text, &mut cache, &mut first);
    for _ in 0..3 {
        let mut again = Vec::new();
        bpe.encode_ordinary(text, &mut cache, &mut again);
        assert_eq!(again, first);
    }
    let mut want = Vec::new();
    Pattern::R50k.split(text, |piece| {
        let piece = piece.as_bytes();
        match bpe.rank(piece) {
            Rank::MAX => want.extend(reference_merge(&bpe, piece)),
            rank => want.push(rank),
        }
    });
    assert_eq!(first, want);
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
