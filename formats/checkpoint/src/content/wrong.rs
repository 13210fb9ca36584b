//! What a file holds when it is not a checkpoint at all (an empty file, a Git LFS
//! pointer, an HTML page).

/// What a file holds instead of a checkpoint, from its first bytes and size.
pub fn wrong_content(head: &[u8], size: u64) -> Option<String> {
    if size == 0 {
        return Some("empty (0 bytes)".into());
    }
    if head.starts_with(b"version https://git-lfs.github.com/spec/") {
        let text = String::from_utf8_lossy(&head[..head.len().min(512)]);
        let oid = text
            .lines()
            .find_map(|l| l.strip_prefix("oid sha256:"))
            .map(|o| format!(" (oid sha256:{})", o.trim()))
            .unwrap_or_default();
        let real = text
            .lines()
            .find_map(|l| l.strip_prefix("size "))
            .map(|s| format!(" of a {}-byte file", s.trim()))
            .unwrap_or_default();
        return Some(format!(
            "a Git LFS pointer{real}{oid}, not the data: run `git lfs pull` (or download the file itself)"
        ));
    }
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let text = head[start..head.len().min(start + 64)].to_ascii_lowercase();
    if text.starts_with(b"<!doctype html") || text.starts_with(b"<html") {
        return Some(
            "an HTML page (an error or login page saved instead of the download), not a checkpoint"
                .into(),
        );
    }
    if text.starts_with(b"<?xml") && head.windows(7).any(|w| w == b"<Error>") {
        return Some("an XML error document (object store), not a checkpoint".into());
    }
    None
}
