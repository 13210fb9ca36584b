//! Tars the way GNU tar writes sparse files and PAX records, for the unit tests of both
//! walks (the integration tests make them with GNU tar itself).

/// A header block: `name`, `size` in the size field, `typeflag`, GNU or POSIX magic;
/// `fill` edits it before the checksum is set.
pub(crate) fn header(
    name: &[u8],
    size: u64,
    typeflag: u8,
    gnu: bool,
    fill: impl FnOnce(&mut [u8; 512]),
) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = typeflag;
    h[257..265].copy_from_slice(if gnu { b"ustar  \0" } else { b"ustar\x0000" });
    fill(&mut h);
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// `data` and its padding to a block.
fn padded(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    out.resize(data.len().div_ceil(512) * 512, 0);
    out
}

/// A regular member.
pub(crate) fn file(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = header(name.as_bytes(), data.len() as u64, b'0', false, |_| {}).to_vec();
    out.extend(padded(data));
    out
}

/// `LEN key=value\n`.
pub(crate) fn record(key: &str, value: &[u8]) -> Vec<u8> {
    let body = [key.as_bytes(), b"=", value, b"\n"].concat();
    let mut len = body.len() + 2;
    while format!("{len} ").len() + body.len() != len {
        len += 1;
    }
    [format!("{len} ").into_bytes(), body].concat()
}

/// A PAX extended header holding `records`.
pub(crate) fn pax(name: &str, records: &[Vec<u8>]) -> Vec<u8> {
    let data = records.concat();
    let mut out = header(
        format!("./PaxHeaders/{name}").as_bytes(),
        data.len() as u64,
        b'x',
        false,
        |_| {},
    )
    .to_vec();
    out.extend(padded(&data));
    out
}

/// The end-of-archive marker.
pub(crate) fn end() -> Vec<u8> {
    vec![0; 1024]
}

/// What `tarfile` reads of a sparse file (`size` bytes, each segment a run of its own
/// byte, the holes zeros), and its stored bytes.
pub(crate) fn sparse_content(size: u64, map: &[(u64, u64)]) -> (Vec<u8>, Vec<u8>) {
    let mut whole = vec![0u8; size as usize];
    let mut stored = Vec::new();
    for (i, &(offset, len)) in map.iter().enumerate() {
        let byte = b'A' + (i % 26) as u8;
        let end = ((offset + len) as usize).min(whole.len());
        whole[(offset as usize).min(end)..end].fill(byte);
        stored.extend(std::iter::repeat_n(byte, len as usize));
    }
    (whole, stored)
}

fn entry(offset: u64, len: u64) -> Vec<u8> {
    format!("{offset:011o}\0{len:011o}\0").into_bytes()
}

/// An old GNU sparse member (`tar --sparse --format=gnu`): up to 4 entries in the
/// header, 21 in each extended sparse header after it.
pub(crate) fn gnu_sparse(name: &str, size: u64, map: &[(u64, u64)]) -> Vec<u8> {
    let (_, stored) = sparse_content(size, map);
    let (inline, rest) = map.split_at(map.len().min(4));
    let mut out = header(name.as_bytes(), stored.len() as u64, b'S', true, |h| {
        for (i, &(offset, len)) in inline.iter().enumerate() {
            h[386 + 24 * i..410 + 24 * i].copy_from_slice(&entry(offset, len));
        }
        h[482] = u8::from(!rest.is_empty());
        h[483..495].copy_from_slice(format!("{size:011o}\0").as_bytes());
    })
    .to_vec();
    let chunks: Vec<&[(u64, u64)]> = rest.chunks(21).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut ext = [0u8; 512];
        for (j, &(offset, len)) in chunk.iter().enumerate() {
            ext[24 * j..24 * j + 24].copy_from_slice(&entry(offset, len));
        }
        ext[504] = u8::from(i + 1 < chunks.len());
        out.extend(ext);
    }
    out.extend(padded(&stored));
    out
}

/// A PAX format 1.0 sparse member (`tar --sparse --format=pax`): its name and real
/// size in records, its header named `GNUSparseFile.0/NAME`, the map text first in its
/// data.
pub(crate) fn pax_sparse(name: &str, size: u64, map: &[(u64, u64)]) -> Vec<u8> {
    let (_, stored) = sparse_content(size, map);
    let mut text = format!("{}\n", map.len());
    for (offset, len) in map {
        text.push_str(&format!("{offset}\n{len}\n"));
    }
    let text = padded(text.as_bytes());
    let mut out = pax(
        name,
        &[
            record("GNU.sparse.major", b"1"),
            record("GNU.sparse.minor", b"0"),
            record("GNU.sparse.name", name.as_bytes()),
            record("GNU.sparse.realsize", size.to_string().as_bytes()),
        ],
    );
    let header_name = format!("./GNUSparseFile.0/{name}");
    let total = (text.len() + stored.len()) as u64;
    out.extend(header(header_name.as_bytes(), total, b'0', false, |_| {}));
    out.extend(text);
    out.extend(padded(&stored));
    out
}

/// A PAX format 0.1 sparse member: the map in a `GNU.sparse.map` record.
pub(crate) fn pax01_sparse(name: &str, size: u64, map: &[(u64, u64)]) -> Vec<u8> {
    let (_, stored) = sparse_content(size, map);
    let list: Vec<String> = map.iter().map(|(o, n)| format!("{o},{n}")).collect();
    let mut out = pax(
        name,
        &[
            record("GNU.sparse.size", size.to_string().as_bytes()),
            record("GNU.sparse.numblocks", map.len().to_string().as_bytes()),
            record("GNU.sparse.name", name.as_bytes()),
            record("GNU.sparse.map", list.join(",").as_bytes()),
        ],
    );
    let header_name = format!("./GNUSparseFile.0/{name}");
    out.extend(header(
        header_name.as_bytes(),
        stored.len() as u64,
        b'0',
        false,
        |_| {},
    ));
    out.extend(padded(&stored));
    out
}
