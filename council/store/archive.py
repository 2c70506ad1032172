"""JSONL archive files, optionally zstd-compressed.

A compressed archive ``NAME`` is a pair: ``NAME.zst``, a sequence of independent zstd frames each holding
whole lines, followed logically by the plain ``NAME``, the tail not yet compressed. A plain archive is the
plain file alone. Lines are appended to the tail; :func:`compact` moves the tail into one new frame (frame
written and synced first, then the tail replaced by an empty file), so a crash leaves either a torn last
frame (its lines still in the tail) or a tail that begins with the last frame's lines. Readers skip both,
and :func:`repair` removes them.

A line's location is an int: ``offset << 1`` for a line at byte ``offset`` of the tail, or
``(frame_offset << LINE_BITS | line) << 1 | 1`` for line number ``line`` of the frame at byte
``frame_offset`` of ``NAME.zst``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import zstandard

from council.core.errors import RunFolderError

ZST = ".zst"
FRAME_LINES = 2_000  # a tail this many lines long is compressed into a frame
FRAME_BYTES = 4 << 20  # ... and so is a tail this many bytes long; rows.jsonl.zst frames hold about as much
LEVEL = 3  # zstd compression level
LINE_BITS = 32  # bits of a frame location that number the line within the frame

_MAGIC = 0xFD2FB528
_MAX_HEADER = 18  # the longest zstd frame header, magic number included


def zst_path(path: Path) -> Path:
    return path.with_name(path.name + ZST)


def exists(path: Path) -> bool:
    """Whether the archive ``path`` exists in either form."""
    return path.is_file() or zst_path(path).is_file()


def tail_location(offset: int) -> int:
    return offset << 1


def frame_location(frame_offset: int, line: int) -> int:
    return (frame_offset << LINE_BITS | line) << 1 | 1


def split_location(loc: int) -> tuple[int | None, int]:
    """``(frame offset, line number)`` of a frame location, ``(None, byte offset)`` of a tail location."""
    if loc & 1:
        loc >>= 1
        return loc >> LINE_BITS, loc & ((1 << LINE_BITS) - 1)
    return None, loc >> 1


def describe(loc: int) -> str:
    frame, at = split_location(loc)
    return f"byte {at}" if frame is None else f"line {at + 1} of the frame at byte {frame} of the .zst file"


def iter_lines(path: Path) -> Iterator[bytes]:
    """The lines of the archive ``path`` in order, each with its newline (a torn last line without one).
    A torn last frame and lines the tail repeats from the last frame are skipped. Raises FileNotFoundError
    when neither form exists."""
    for _, line in iter_located(path):
        yield line


def lines_from(path: Path, first: int, count: int) -> list[bytes]:
    """The ``count`` lines with content of the archive ``path`` from the location ``first`` on (a location
    :func:`iter_located` gave)."""
    return list(itertools.islice((line for _, line in iter_located(path, start=first) if line.strip()), count))


def iter_located(path: Path, tail: IO[bytes] | None = None, start: int | None = None) -> Iterator[tuple[int, bytes]]:
    """:func:`iter_lines` with each line's location. ``tail``, when given, is an open handle of the plain
    file to read (it is left open). The tail is opened before the frames are listed, so a compaction while
    reading leaves its lines in that handle, or in a frame and that handle (and then skipped there). With
    ``start`` (a location this gave), the lines before it are not read."""
    first_frame, first_line = split_location(start) if start is not None else (0, 0)
    own = None
    if tail is None:
        try:
            tail = own = open(path, "rb")
        except FileNotFoundError:
            if not zst_path(path).is_file():
                raise
    try:
        last = b""
        try:
            handle = open(zst_path(path), "rb") if first_frame is not None else None
        except FileNotFoundError:
            handle = None
        if handle is not None:
            with handle:
                end = os.fstat(handle.fileno()).st_size
                for offset, stop in _frames(handle, end, zst_path(path), first_frame):
                    last = _content(handle, offset, stop, zst_path(path))
                    for number, line in enumerate(last.splitlines(keepends=True)):
                        if offset != first_frame or number >= first_line:
                            yield frame_location(offset, number), line
        if tail is None:
            return
        at = first_line if first_frame is None else 0  # a start in the tail: its byte
        tail.seek(at)
        if last and not at and os.fstat(tail.fileno()).st_size >= len(last):
            if tail.read(len(last)) == last:  # a compaction that crashed before replacing the tail
                at = len(last)
            tail.seek(at)
        for line in tail:
            yield tail_location(at), line
            at += len(line)
    finally:
        if own is not None:
            own.close()


def read_frame(handle: IO[bytes], offset: int) -> bytes:
    """The content of the frame at ``offset`` of an open ``.zst`` file."""
    name = Path(getattr(handle, "name", "?"))
    stop = _frame_end(handle, offset, os.fstat(handle.fileno()).st_size, name)
    if stop is None:
        raise RunFolderError(f"{name}: no complete frame at byte {offset}")
    return _content(handle, offset, stop, name)


def compress(content: bytes) -> bytes:
    """One frame holding ``content``, with its size and a checksum."""
    return zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compress(content)


def write_frames(handle: IO[bytes], lines: Iterable[bytes]) -> int:
    """Write ``lines`` to ``handle`` as frames of about :data:`FRAME_BYTES` each; returns how many lines."""
    count, size, chunk = 0, 0, []
    for line in lines:
        chunk.append(line)
        count += 1
        size += len(line)
        if size >= FRAME_BYTES:
            handle.write(compress(b"".join(chunk)))
            chunk, size = [], 0
    if chunk:
        handle.write(compress(b"".join(chunk)))
    return count


def compact(path: Path) -> tuple[int, bytes] | None:
    """Move the tail of ``path`` into one new frame at the end of ``path.zst``: the frame is appended and
    synced, then the tail is replaced by an empty file. The tail must hold whole lines and already be synced.
    Returns the frame's offset and content, or None when the tail is empty."""
    content = path.read_bytes() if path.is_file() else b""
    if not content:
        return None
    target = zst_path(path)
    created = not target.exists()
    with open(target, "ab") as handle:
        offset = handle.seek(0, os.SEEK_END)
        handle.write(compress(content))
        handle.flush()
        os.fsync(handle.fileno())
    if created:
        fsync_dir(path.parent)
    replace_bytes(path, b"")
    return offset, content


def repair(path: Path) -> tuple[int, bytes] | None:
    """Make the archive ``path`` appendable after a crash: cut a torn last frame off ``path.zst``, drop the
    lines the tail repeats from the last frame, and cut a torn last line off the tail. When lines were
    dropped (the tail is then a new file), returns that frame's offset and content."""
    target = zst_path(path)
    last, previous = b"", 0
    if target.is_file():
        with open(target, "r+b") as handle:
            end = os.fstat(handle.fileno()).st_size
            good = 0
            for previous, good in _frames(handle, end, target):
                pass
            if good < end:
                handle.truncate(good)
                handle.flush()
                os.fsync(handle.fileno())
            if good:
                last = _content(handle, previous, good, target)
    if not path.is_file():
        return None
    rest = None
    if last and path.stat().st_size >= len(last):
        with open(path, "rb") as handle:
            if handle.read(len(last)) == last:
                rest = handle.read()
        if rest is not None:
            replace_bytes(path, rest)
    cut_torn_line(path)
    return None if rest is None else (previous, last)


def replace_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` by a new file holding ``data``, durably (synced file, rename, synced folder)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cut_torn_line(path: Path) -> None:
    """Cut a torn last line (no newline: a crash mid-write) off the plain JSONL file ``path``."""
    with open(path, "r+b") as handle:
        end = pos = handle.seek(0, os.SEEK_END)
        while pos > 0:
            step = min(pos, 1 << 16)
            pos -= step
            handle.seek(pos)
            block = handle.read(step)
            newline = block.rfind(b"\n")
            if newline >= 0:
                pos += newline + 1
                break
        if pos < end:
            handle.truncate(pos)


def _frames(handle: IO[bytes], end: int, name: Path, offset: int = 0) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of each complete frame of an open ``.zst`` file from byte ``offset`` (a frame's start) up to
    byte ``end``; stops at a torn last frame (one that runs past ``end``, or zero bytes up to ``end``)."""
    while offset < end:
        stop = _frame_end(handle, offset, end, name)
        if stop is None:
            return
        yield offset, stop
        offset = stop


def _frame_end(handle: IO[bytes], offset: int, end: int, name: Path) -> int | None:
    """Where the frame at ``offset`` ends, read from its header and block headers (RFC 8878) without
    decompressing it; None when it runs past ``end``."""
    handle.seek(offset)
    head = handle.read(min(_MAX_HEADER, end - offset))
    if len(head) < 4:
        return None
    if int.from_bytes(head[:4], "little") != _MAGIC:
        if _zeros(handle, offset, end):  # space allocated to a frame whose bytes never reached the disk
            return None
        raise RunFolderError(f"{name}: no zstd frame at byte {offset} (the file is damaged)")
    try:
        params = zstandard.get_frame_parameters(head)
        pos = offset + zstandard.frame_header_size(head)
    except zstandard.ZstdError as exc:
        if len(head) < _MAX_HEADER:
            return None
        raise RunFolderError(f"{name}: bad frame header at byte {offset}: {exc}") from exc
    while True:
        if pos + 3 > end:
            return None
        handle.seek(pos)
        word = int.from_bytes(handle.read(3), "little")
        kind = (word >> 1) & 3
        if kind == 3:
            raise RunFolderError(f"{name}: bad block at byte {pos} of the frame at byte {offset}")
        pos += 3 + (1 if kind == 1 else word >> 3)
        if word & 1:
            break
    pos += 4 if params.has_checksum else 0
    return pos if pos <= end else None


def _zeros(handle: IO[bytes], offset: int, end: int) -> bool:
    handle.seek(offset)
    while offset < end:
        block = handle.read(min(end - offset, 1 << 16))
        if not block or block.count(0) != len(block):
            return False
        offset += len(block)
    return True


def _content(handle: IO[bytes], start: int, stop: int, name: Path) -> bytes:
    handle.seek(start)
    data = handle.read(stop - start)
    decoder = zstandard.ZstdDecompressor().decompressobj()
    try:
        content = decoder.decompress(data)
    except zstandard.ZstdError as exc:
        raise RunFolderError(f"{name}: bad frame at byte {start}: {exc}") from exc
    if not decoder.eof or decoder.unused_data or (content and not content.endswith(b"\n")):
        raise RunFolderError(f"{name}: bad frame at byte {start}: not whole lines in one frame")
    return content
