"""The allocator of a long council process: keep its resident memory close to what it holds.

glibc's malloc raises its trim and mmap thresholds each time a large block it mapped is freed (the "dynamic
threshold"), up to 32 MiB and 64 MiB; from then on freed memory at the top of the heap is kept, not returned, and
what a run frees between rows piles up as resident memory no object holds. Measured on the command line path
(``council run --backend local``), that is about 0.3 KB of resident memory per row graded while the Python heap
stays flat. Setting both thresholds (to glibc's own default, 128 KiB) switches the dynamic thresholds off, as the
``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` environment variables would. Elsewhere than glibc nothing is changed.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (malloc.h)
THRESHOLD = 128 * 1024  # glibc's default for both, kept fixed

_settled = False


def settle_allocator() -> bool:
    """Fix glibc malloc's trim threshold once per process; whether it was set (False off glibc)."""
    global _settled
    if _settled:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")  # glibc's name (finding it by ctypes.util runs ldconfig: start-up time)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # both: by now the imports may have raised the mmap threshold, which setting the trim one does not lower
    _settled = mallopt(M_MMAP_THRESHOLD, THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, THRESHOLD) == 1
    return _settled
