//! The sentences of coverage problems.

use super::tiling::{Chunk, MAX_CHUNKS, MAX_WORK, Problem, volume};

pub(super) fn dims(values: &[u64]) -> String {
    let parts: Vec<String> = values.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn region(r: &[(u64, u64)]) -> String {
    let parts: Vec<String> = r.iter().map(|(lo, hi)| format!("{lo}..{hi}")).collect();
    format!("[{}]", parts.join(", "))
}

fn chunk(chunks: &[Chunk], i: usize) -> String {
    let c = &chunks[i];
    format!(
        "chunk {i} (offsets {}, sizes {})",
        dims(&c.offsets),
        dims(&c.sizes)
    )
}

/// The sentence for `problem`, after "tensor `fqn` (shape [..]): ".
pub fn describe(shape: &[u64], chunks: &[Chunk], problem: &Problem) -> String {
    match problem {
        Problem::TooLarge => "its shape has more elements than fit in 64 bits".into(),
        Problem::TooManyChunks(n) => format!(
            "{n} chunks, more than the {MAX_CHUNKS} whose coverage is checked: coverage not checked"
        ),
        Problem::Unchecked => format!(
            "coverage not checked: the .metadata needs more than {MAX_WORK} chunk comparisons"
        ),
        Problem::WrongRank(i) => format!(
            "{} does not give one offset and one size for each of its {} dimension(s)",
            chunk(chunks, *i),
            shape.len()
        ),
        Problem::Outside(i) => format!(
            "{} lies outside the shape {}",
            chunk(chunks, *i),
            dims(shape)
        ),
        Problem::Overlap(a, b, r) => format!("chunks {a} and {b} overlap on {}", region(r)),
        Problem::More(n, what) => match *what {
            "outside" => format!("{n} more chunk(s) lie outside the shape"),
            _ => format!("{n} more pair(s) of chunks overlap"),
        },
        Problem::Gap { count, first } => {
            let total: u64 = shape.iter().product();
            let left = if shape.is_empty() {
                "its one element (a 0-dim tensor) is".to_string()
            } else {
                match first {
                    Some(r) if volume(r) == Some(*count) => {
                        format!("elements {} are", region(r))
                    }
                    Some(r) => format!(
                        "{count} of its {total} elements are, among them {},",
                        region(r)
                    ),
                    None => format!("{count} of its {total} elements are"),
                }
            };
            format!("{left} covered by no chunk (dcp.load cannot fill them)")
        }
    }
}
