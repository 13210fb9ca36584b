"""The Thrift compact protocol as Parquet footers use it: decode a footer into plain
Python values, change fields, encode it back. Used to make Parquet files as other
writers lay them out (a dictionary page offset of 0, parquet-mr 1.2.8's column sizes,
a repeated field without a LIST annotation) from files pyarrow wrote.

A struct is a dict {field id: (type, value)}; a list is (element type, [values]); a
map is (key type, value type, [(k, v)]). Field ids and type codes are those of
parquet.thrift (apache/parquet-format).
"""
import struct

BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


class Reader:
    def __init__(self, data, at=0):
        self.data, self.at = data, at

    def byte(self):
        b = self.data[self.at]
        self.at += 1
        return b

    def varint(self):
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    def zigzag(self):
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind):
        if kind in (BOOL_TRUE, BOOL_FALSE):
            return self.byte() == BOOL_TRUE
        if kind == BYTE:
            return self.byte()
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            v = struct.unpack_from("<d", self.data, self.at)[0]
            self.at += 8
            return v
        if kind == BINARY:
            n = self.varint()
            v = bytes(self.data[self.at:self.at + n])
            self.at += n
            return v
        if kind in (LIST, SET):
            header = self.byte()
            size = header >> 4
            if size == 15:
                size = self.varint()
            element = header & 0x0F
            return (element, [self.value(element) for _ in range(size)])
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return (0, 0, [])
            types = self.byte()
            return (types >> 4, types & 0x0F,
                    [(self.value(types >> 4), self.value(types & 0x0F)) for _ in range(size)])
        if kind == STRUCT:
            fields, last = {}, 0
            while True:
                header = self.byte()
                if header == 0:
                    return fields
                delta, ftype = header >> 4, header & 0x0F
                fid = last + delta if delta else self.zigzag()
                last = fid
                if ftype in (BOOL_TRUE, BOOL_FALSE):
                    fields[fid] = (BOOL_TRUE, ftype == BOOL_TRUE)
                else:
                    fields[fid] = (ftype, self.value(ftype))
        raise ValueError(f"unknown Thrift type {kind} at byte {self.at}")


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n):
    return _varint((n << 1) ^ (n >> 63))


def encode(kind, value):
    if kind in (BOOL_TRUE, BOOL_FALSE):
        return bytes([BOOL_TRUE if value else BOOL_FALSE])
    if kind == BYTE:
        return bytes([value & 0xFF])
    if kind in (I16, I32, I64):
        return _zigzag(value)
    if kind == DOUBLE:
        return struct.pack("<d", value)
    if kind == BINARY:
        return _varint(len(value)) + value
    if kind in (LIST, SET):
        element, items = value
        head = bytes([(len(items) << 4) | element]) if len(items) < 15 else bytes([0xF0 | element]) + _varint(len(items))
        return head + b"".join(encode(element, v) for v in items)
    if kind == MAP:
        ktype, vtype, items = value
        if not items:
            return b"\x00"
        return _varint(len(items)) + bytes([(ktype << 4) | vtype]) + b"".join(
            encode(ktype, k) + encode(vtype, v) for k, v in items)
    if kind == STRUCT:
        out, last = bytearray(), 0
        for fid in sorted(value):
            ftype, v = value[fid]
            wire = (BOOL_TRUE if v else BOOL_FALSE) if ftype in (BOOL_TRUE, BOOL_FALSE) else ftype
            if 0 < fid - last <= 15:
                out.append(((fid - last) << 4) | wire)
            else:
                out.append(wire)
                out += _zigzag(fid)
            last = fid
            if ftype not in (BOOL_TRUE, BOOL_FALSE):
                out += encode(ftype, v)
        out.append(0)
        return bytes(out)
    raise ValueError(f"unknown Thrift type {kind}")


def read_footer(data):
    """(FileMetaData struct, offset where the footer starts) of a Parquet file's bytes."""
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", "not a Parquet file"
    length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - length
    return Reader(data, start).value(STRUCT), start


def with_footer(data, meta):
    """The file's bytes with its footer replaced by `meta` (pages unchanged)."""
    _, start = read_footer(data)
    footer = encode(STRUCT, meta)
    return data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1"


# FileMetaData: 2 schema, 4 row_groups, 5 key_value_metadata, 6 created_by.
# RowGroup: 1 columns. ColumnChunk: 3 meta_data. ColumnMetaData: 3 path_in_schema,
# 6 total_uncompressed_size, 7 total_compressed_size, 9 data_page_offset,
# 11 dictionary_page_offset. SchemaElement: 1 type, 3 repetition_type, 4 name,
# 5 num_children, 6 converted_type, 10 logicalType.
def column_meta(meta):
    """Every ColumnMetaData struct of the footer (row group by row group)."""
    for group in meta[4][1][1]:
        for chunk in group[1][1][1]:
            yield chunk[3][1]
