"""Fuzzing the GGUF header reader: random flips, planted numbers and cuts of real headers.

Whatever the bytes, reading gives a header or a GgufError, quickly; nothing else escapes.
A seeded random loop (hypothesis is not a dependency); a failure prints the case's seed.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
import time
from pathlib import Path

import gguf
import numpy as np
import pytest

from roundhouse.core.knowledge.gguf import GgufError, read_gguf_header, shape_from_gguf, summarize

CASES = 4000
INTERESTING = (0, 1, 4, 7, 8, 255, 256, 2**16, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1)


def _base_files(folder: Path) -> list[bytes]:
    """A model-like header with a vocabulary long enough for the fast skip, and tensors."""
    path = folder / "base.gguf"
    writer = gguf.GGUFWriter(os.fspath(path), arch="llama")
    writer.add_name("fuzz")
    writer.add_block_count(2)
    writer.add_context_length(4096)
    writer.add_embedding_length(32)
    writer.add_head_count(4)
    writer.add_head_count_kv([2, 1])
    writer.add_sliding_window(64)
    writer.add_sliding_window_pattern([True, False])
    writer.add_token_list([f"tok{i}" for i in range(1500)])
    writer.add_token_scores([float(i) for i in range(1500)])
    writer.add_array("fuzz.nested", [[1, 2], [3]])
    writer.add_array("fuzz.strs", ["a", "bb"])
    writer.add_tensor("token_embd.weight", np.zeros((4, 32), dtype=np.float32))
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((2, 32), dtype=np.float32))
    writer.add_tensor("blk.1.attn_q.weight", np.zeros((2, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    whole = path.read_bytes()
    return [whole, whole[: len(whole) // 2]]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.45 and out:
            for _ in range(rng.randint(1, 4)):
                out[rng.randrange(len(out))] = rng.randrange(256)
        elif kind < 0.85 and len(out) > 8:
            at = rng.randrange(len(out) - 8)
            value = rng.choice(INTERESTING) if rng.random() < 0.8 else rng.getrandbits(64)
            width = rng.choice((4, 8))
            out[at : at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        else:
            del out[rng.randrange(len(out) + 1) :]
    return bytes(out)


@pytest.mark.timeout(300)
def test_random_damage_gives_only_gguf_errors(tmp_path: Path) -> None:
    bases = _base_files(tmp_path)
    path = tmp_path / "case.gguf"
    outcomes = {"read": 0, "refused": 0}
    slowest = 0.0
    started = time.perf_counter()
    for seed in range(CASES):
        rng = random.Random(seed)
        path.write_bytes(_mutate(rng.choice(bases), rng))
        began = time.perf_counter()
        try:
            header = read_gguf_header(path)
            summarize(header)
            with contextlib.suppress(GgufError):  # a header may read but not be a model
                shape_from_gguf(header)
            outcomes["read"] += 1
        except GgufError as exc:
            assert "; " in str(exc), seed  # a problem, then what to do
            outcomes["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - the point: report any other escape
            pytest.fail(f"case {seed}: {type(exc).__name__}: {exc}")
        slowest = max(slowest, time.perf_counter() - began)
    elapsed = time.perf_counter() - started
    print(f"{outcomes}, slowest case {slowest * 1000:.1f} ms, all {elapsed:.1f} s")
    assert outcomes["read"] > 50 and outcomes["refused"] > 500  # both paths exercised
    assert slowest < 1.0


def test_planted_lengths_in_a_vocabulary(tmp_path: Path) -> None:
    """Every 8-byte slot of the vocabulary's first strings set to a hostile length."""
    whole = _base_files(tmp_path)[0]
    start = whole.index(b"tok0") - 8
    path = tmp_path / "planted.gguf"
    for at in range(start, start + 200):
        for value in (0, 255, 256, 2**40, 2**64 - 1):
            data = whole[:at] + struct.pack("<Q", value) + whole[at + 8 :]
            path.write_bytes(data)
            with contextlib.suppress(GgufError):  # anything else escaping fails the test
                read_gguf_header(path)
