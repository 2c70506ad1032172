"""Reading a zip archive's members, zstd-compressed ones included (inspect_ai writes ``.eval`` logs so).

The standard library reads stored and deflated members; a member of compression method 93 (Zstandard) is
read here from its local header and decompressed with the ``zstandard`` package, its size and CRC-32
checked, whether or not another library has taught ``zipfile`` that method.
"""

from __future__ import annotations

import struct
import zipfile
import zlib

import zstandard

ZSTD = 93  # the zip compression method number of Zstandard (APPNOTE 4.4.5)
_LOCAL_HEADER = b"PK\x03\x04"

# what a damaged archive can raise while it is opened or a member is read
ERRORS = (OSError, EOFError, ValueError, RuntimeError, KeyError, NotImplementedError, struct.error,
          zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, zstandard.ZstdError)


def read_member(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The uncompressed bytes of ``info``; raises one of :data:`ERRORS` when they cannot be had."""
    if info.compress_type != ZSTD:
        return archive.read(info)
    if info.flag_bits & 0x1:
        raise NotImplementedError("encrypted member")
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        head = handle.read(30)
        if len(head) < 30 or not head.startswith(_LOCAL_HEADER):
            raise zipfile.BadZipFile("bad local file header")
        name_len, extra_len = struct.unpack("<HH", head[26:30])
        handle.seek(info.header_offset + 30 + name_len + extra_len)
        raw = handle.read(info.compress_size)
    if len(raw) != info.compress_size:
        raise EOFError("member truncated")
    data = _unzstd(raw, info.file_size)
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile("bad CRC-32 or size")
    return data


def _unzstd(raw: bytes, size: int) -> bytes:
    """Every frame of ``raw`` decompressed, reading at most one byte past ``size``."""
    chunks: list[bytes] = []
    total = 0
    with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as reader:
        while total <= size:
            chunk = reader.read(min(1 << 20, size + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    return b"".join(chunks)
