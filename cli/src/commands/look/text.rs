//! Text helpers `ls`, `cat` and `stats` share: aligned tables, counts, warnings about
//! samples left out, and writing to stdout.

use anyhow::Result;
use shardsmith_manifest::Skipped;

use crate::output::Printer;

/// Rows as columns two spaces apart, each as wide as its widest cell; `right` marks
/// the columns aligned right (numbers). The last column is not padded.
pub fn table(rows: &[Vec<String>], right: &[bool]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i] - cell.chars().count();
            let last = i + 1 == row.len();
            if right.get(i).copied().unwrap_or(false) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if !last {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Samples the reader left out: the first five as warnings, or all with -v.
pub fn warn_skipped(printer: &Printer, skipped: &[Skipped]) {
    let shown = if printer.verbose() { usize::MAX } else { 5 };
    for skip in skipped.iter().take(shown) {
        printer.warn(&format!("`{}` left out: {}", skip.path, skip.reason));
    }
    if skipped.len() > shown {
        printer.warn(&format!(
            "... {} more left out (-v lists them all)",
            skipped.len() - shown
        ));
    }
}

/// `n` and the noun, plural unless `n` is 1.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn tables_align() {
        let rows = vec![
            vec!["A".into(), "BYTES".into(), "F".into()],
            vec!["long-name".into(), "7".into(), "x".into()],
        ];
        assert_eq!(
            table(&rows, &[false, true, false]),
            "A          BYTES  F\nlong-name      7  x\n"
        );
    }
}
