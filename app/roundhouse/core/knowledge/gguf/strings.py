"""Skipping long arrays of strings (tokenizer vocabularies and merges) at numpy speed.

Each string is a u64 length and its bytes, so finding the end of an array of 150,000 of
them means walking every length: about 30 ms in a Python loop for a Llama 3 vocabulary
plus merges. Instead, a window of bytes is scanned at once for the places where a u64
below 256 starts (tokens are short, and their text has no runs of seven zero bytes);
from a position known to start a string, each candidate whose successor is exactly
`start + 8 + length` is the next string. The chain is only ever extended from a known
start, so a false candidate or a long string breaks it and is walked in Python instead:
the result is exact whatever the bytes are, and only the speed depends on them.
"""

from __future__ import annotations

import numpy as np

from roundhouse.core.knowledge.gguf.cursor import U64, Cursor

WINDOW = 1 << 20
# Fewer strings than this are walked in Python: numpy's setup would cost more.
FAST_MIN = 256
# A string takes 8 bytes and its text: candidates are looked for this far per string
# still to skip, so little is scanned past the array's end.
SCAN_PER_STRING = 48
# Runs of candidates shorter than this on average mean the bytes defeat the scan.
MIN_AVERAGE_RUN = 8


def skip_strings(cur: Cursor, count: int, what: str) -> None:
    """Move the cursor past `count` length-prefixed strings, checking every bound."""
    while count > 0:
        view = cur.window(WINDOW)
        done = pos = 0
        if count >= FAST_MIN:
            done, pos = _chain(view, count)
        if done < count:
            more, pos = _walk(view, pos, count - done)
            done += more
        cur.skip(pos, what)  # refuses an end past the file or the header cap
        count -= done


def _walk(view: memoryview, pos: int, count: int) -> tuple[int, int]:
    """Follow lengths in Python while they start inside the view."""
    unpack = U64.unpack_from
    last = len(view) - 8
    done = 0
    while done < count and pos <= last:
        pos += 8 + unpack(view, pos)[0]
        done += 1
    return done, pos


def _chain(view: memoryview, count: int) -> tuple[int, int]:
    """How many strings (at most `count`) start the view, and where the last one ends."""
    n = min(len(view) - 7, count * SCAN_PER_STRING)
    if n < 1:
        return 0, 0
    words = np.ndarray((n,), dtype="<u8", buffer=view, strides=(1,))
    short = words < 256
    # The first count * 8 bytes lie inside the array: more candidates there than strings
    # could fit means bytes built to defeat the scan (runs of zeros), so walk them.
    inside = min(n, count * 8)
    if np.count_nonzero(short[:inside]) > inside // 8 + 64:
        return 0, 0
    starts = np.flatnonzero(short)
    ends = starts + 8 + words[starts].astype(np.int64)
    breaks = np.flatnonzero(starts[1:] != ends[:-1])
    last = len(starts) - 1
    done = pos = steps = 0
    while done < count and pos < n:  # every start below n was scanned
        steps += 1
        if steps > 64 and done < MIN_AVERAGE_RUN * steps:
            break
        i = int(np.searchsorted(starts, pos))
        if i <= last and starts[i] == pos:
            b = int(np.searchsorted(breaks, i))
            j = int(breaks[b]) if b < len(breaks) else last
            k = min(j - i + 1, count - done)
            pos = int(ends[i + k - 1])
            done += k
        else:  # a string of 256 bytes or more: its length is not among the candidates
            pos += 8 + int(U64.unpack_from(view, pos)[0])
            done += 1
    return done, pos
