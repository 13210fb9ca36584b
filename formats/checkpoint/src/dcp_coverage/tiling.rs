//! Whether the chunks of one tensor tile its shape exactly once: each within the shape,
//! no two intersecting (a sweep along the most divided dimension), no element left out.

/// Most chunks of one tensor whose coverage is checked (pairs are compared).
pub const MAX_CHUNKS: usize = 10_000;
/// Most box comparisons (chunk pairs, grid cells × chunks) for one `.metadata`.
pub const MAX_WORK: u64 = 50_000_000;
/// Most grid cells × chunks spent on naming the elements no chunk covers, per tensor.
const MAX_GRID_WORK: u64 = 1 << 22;
/// Most chunks (or chunk pairs) of one tensor named for one kind of problem.
pub(super) const MAX_NAMED: usize = 4;

/// One chunk: where it starts and how far it extends in each dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Start in each dimension.
    pub offsets: Vec<u64>,
    /// Extent in each dimension.
    pub sizes: Vec<u64>,
}

/// A half-open range per dimension.
type Region = Vec<(u64, u64)>;

/// What is wrong with the chunks of one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The shape has more elements than fit in 64 bits.
    TooLarge,
    /// More chunks than [`MAX_CHUNKS`]: coverage not checked.
    TooManyChunks(usize),
    /// The comparison budget of the `.metadata` ([`MAX_WORK`]) ran out.
    Unchecked,
    /// Chunk `i` does not give one offset and one size per dimension.
    WrongRank(usize),
    /// Chunk `i` reaches past the shape.
    Outside(usize),
    /// Chunks `a` and `b` both cover `region`.
    Overlap(usize, usize, Region),
    /// `count` elements are in no chunk; `first` is the first uncovered block found,
    /// when it could be found cheaply.
    Gap { count: u64, first: Option<Region> },
    /// `count` more problems like the last one named.
    More(u64, &'static str),
}

/// Elements of `region`; `None` past 64 bits.
pub(super) fn volume(region: &[(u64, u64)]) -> Option<u64> {
    region
        .iter()
        .try_fold(1u64, |v, &(lo, hi)| v.checked_mul(hi - lo))
}

/// The coverage problems of a tensor of `shape` stored as `chunks`.
#[cfg(test)]
pub fn coverage(shape: &[u64], chunks: &[Chunk]) -> Vec<Problem> {
    let mut budget = MAX_WORK;
    coverage_within(shape, chunks, &mut budget)
}

/// [`coverage`] spending at most `budget` box comparisons (deducted).
pub fn coverage_within(shape: &[u64], chunks: &[Chunk], budget: &mut u64) -> Vec<Problem> {
    let mut out = Vec::new();
    let Some(total) = shape.iter().try_fold(1u64, |v, &d| v.checked_mul(d)) else {
        return vec![Problem::TooLarge];
    };
    if chunks.len() > MAX_CHUNKS {
        return vec![Problem::TooManyChunks(chunks.len())];
    }
    // Each chunk clipped to the shape; the part outside is reported, the rest counts.
    let mut boxes: Vec<(usize, Region)> = Vec::new();
    let mut outside = 0u64;
    for (i, c) in chunks.iter().enumerate() {
        if c.offsets.len() != shape.len() || c.sizes.len() != shape.len() {
            out.push(Problem::WrongRank(i));
            continue;
        }
        let mut clipped = Vec::with_capacity(shape.len());
        let mut inside = true;
        for ((&o, &s), &d) in c.offsets.iter().zip(&c.sizes).zip(shape) {
            inside &= o.checked_add(s).is_some_and(|end| end <= d);
            clipped.push((o.min(d), o.saturating_add(s).min(d)));
        }
        if !inside {
            outside += 1;
            if outside as usize <= MAX_NAMED {
                out.push(Problem::Outside(i));
            }
        }
        boxes.push((i, clipped));
    }
    if outside as usize > MAX_NAMED {
        out.push(Problem::More(outside - MAX_NAMED as u64, "outside"));
    }
    let Some(overlaps) = overlaps(&boxes, budget, &mut out) else {
        out.push(Problem::Unchecked);
        return out;
    };
    if total == 0 {
        return out;
    }
    let regions: Vec<&Region> = boxes.iter().map(|(_, r)| r).collect();
    let covered: u128 = regions
        .iter()
        .map(|r| u128::from(volume(r).unwrap_or(0)))
        .sum();
    if overlaps == 0 && covered == u128::from(total) {
        // Disjoint, within the shape, as many elements as it has: an exact cover.
        return out;
    }
    match uncovered(shape, &regions, budget) {
        Some((0, _)) => {}
        Some((count, first)) => out.push(Problem::Gap {
            count,
            first: Some(first),
        }),
        // Disjoint chunks within the shape: what they leave is the difference.
        None if overlaps == 0 => out.push(Problem::Gap {
            count: u64::try_from(u128::from(total).saturating_sub(covered)).unwrap_or(u64::MAX),
            first: None,
        }),
        None => {}
    }
    out
}

/// Pushes the overlapping pairs of `boxes` (the first few by name) and returns their
/// count; `None` when `budget` runs out. Sweeps along the dimension with the most
/// distinct chunk starts: a box is compared only with those starting before it ends.
fn overlaps(boxes: &[(usize, Region)], budget: &mut u64, out: &mut Vec<Problem>) -> Option<u64> {
    let mut live: Vec<&(usize, Region)> = boxes
        .iter()
        .filter(|(_, r)| r.iter().all(|&(lo, hi)| lo < hi))
        .collect();
    let dims = live.first().map_or(0, |(_, r)| r.len());
    let axis = (0..dims).max_by_key(|&d| {
        let mut starts: Vec<u64> = live.iter().map(|(_, r)| r[d].0).collect();
        starts.sort_unstable();
        starts.dedup();
        starts.len()
    });
    if let Some(d) = axis {
        live.sort_by_key(|(i, r)| (r[d].0, *i));
    }
    let mut count = 0u64;
    let mut named = Vec::new();
    for (n, (a, ra)) in live.iter().enumerate() {
        for (b, rb) in &live[n + 1..] {
            if axis.is_some_and(|d| rb[d].0 >= ra[d].1) {
                break;
            }
            *budget = budget.checked_sub(1)?;
            let common = ra
                .iter()
                .zip(rb)
                .map(|(&(alo, ahi), &(blo, bhi))| (alo.max(blo), ahi.min(bhi)));
            if common.clone().all(|(lo, hi)| lo < hi) {
                count += 1;
                if named.len() < MAX_NAMED {
                    named.push(((*a).min(*b), (*a).max(*b), common.collect::<Region>()));
                }
            }
        }
    }
    named.sort();
    out.extend(named.into_iter().map(|(a, b, r)| Problem::Overlap(a, b, r)));
    if count as usize > MAX_NAMED {
        out.push(Problem::More(count - MAX_NAMED as u64, "overlap"));
    }
    Some(count)
}

/// The number of elements of `shape` in none of `regions`, and the first uncovered
/// block (row-major), computed on the grid the region boundaries cut the shape into;
/// `None` when that grid is too large to walk.
fn uncovered(shape: &[u64], regions: &[&Region], budget: &mut u64) -> Option<(u64, Region)> {
    let cuts: Vec<Vec<u64>> = shape
        .iter()
        .enumerate()
        .map(|(d, &dim)| {
            let mut cut: Vec<u64> = regions
                .iter()
                .flat_map(|r| [r[d].0, r[d].1])
                .chain([0, dim])
                .collect();
            cut.sort_unstable();
            cut.dedup();
            cut
        })
        .collect();
    let cells = cuts
        .iter()
        .try_fold(1u64, |v, c| v.checked_mul(c.len() as u64 - 1))?;
    let work = cells.checked_mul(regions.len() as u64 + 1)?;
    if work > MAX_GRID_WORK.min(*budget) {
        return None;
    }
    *budget -= work;
    let mut index = vec![0usize; shape.len()];
    let mut count = 0u64;
    let mut first: Option<Region> = None;
    for _ in 0..cells {
        let cell: Region = index
            .iter()
            .zip(&cuts)
            .map(|(&i, c)| (c[i], c[i + 1]))
            .collect();
        let covered = regions.iter().any(|r| {
            r.iter()
                .zip(&cell)
                .all(|(&(lo, hi), &(clo, chi))| lo <= clo && chi <= hi)
        });
        if !covered {
            count = count.saturating_add(volume(&cell).unwrap_or(u64::MAX));
            first.get_or_insert(cell);
        }
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] + 1 < cuts[d].len() {
                break;
            }
            index[d] = 0;
        }
    }
    Some((count, first.unwrap_or_default()))
}
