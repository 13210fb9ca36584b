//! PNG chunk checks the decoder misses.
//!
//! The png crate (0.18.1) indexes past the end of a PLTE chunk whose length is not a
//! multiple of 3 when the image is expanded to RGBA (a 215-byte file with a 49-byte
//! palette and a tRNS chunk, found by the `image` fuzz target): a panic, not an error.
//! The PNG specification allows 1 to 256 three-byte entries; anything else is refused
//! here, from the chunk headers, before any decoder runs.

use crate::Error;

/// Checks the chunks before the image data: a PNG decode error naming the chunk's offset
/// for a palette the specification does not allow. Other damage is left to the decoder.
pub(crate) fn check_palette(data: &[u8]) -> Result<(), Error> {
    let mut at = 8; // signature
    while let Some(head) = data.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        match &head[4..8] {
            b"PLTE" if len == 0 || !len.is_multiple_of(3) || len > 768 => {
                return Err(Error::Decode {
                    format: "png",
                    detail: format!(
                        "PLTE chunk at byte {at} holds {len} bytes, not 1 to 256 RGB entries (3 bytes each)"
                    ),
                });
            }
            b"IDAT" | b"IEND" => return Ok(()),
            _ => {}
        }
        at = at.saturating_add(12).saturating_add(len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut c = (body.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(body);
        c.extend_from_slice(&[0; 4]); // CRC: not looked at here
        c
    }

    fn png_with_palette(len: usize) -> Vec<u8> {
        let mut data = b"\x89PNG\r\n\x1a\n".to_vec();
        data.extend(chunk(b"IHDR", &[0, 0, 0, 4, 0, 0, 0, 4, 8, 3, 0, 0, 0]));
        data.extend(chunk(b"PLTE", &vec![7; len]));
        data.extend(chunk(b"IDAT", &[1, 2, 3]));
        data
    }

    #[test]
    fn palettes_of_whole_entries_pass_and_others_are_refused() {
        for ok in [3, 48, 768] {
            check_palette(&png_with_palette(ok)).unwrap();
        }
        for bad in [0, 1, 49, 771] {
            let err = check_palette(&png_with_palette(bad))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("holds {bad} bytes")), "{err}");
            assert!(err.contains("at byte 33"), "{err}");
        }
        // Truncated or garbage after the signature: the decoder's business.
        check_palette(b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        check_palette(&[0xff; 40]).unwrap();
    }
}
