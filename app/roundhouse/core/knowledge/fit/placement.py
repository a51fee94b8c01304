"""Which blocks go to which GPU for a given -ngl, the way llama.cpp assigns them.

llama.cpp counts n_layer + 1 offloadable layers: the blocks and the output layer (the
token embeddings always stay in RAM). With `-ngl N`, the last min(N, n_layer) blocks
(n_layer - N .. n_layer - 1) go to the GPUs and the output layer too when N > n_layer;
the first blocks run on the CPU. Over several GPUs (split mode "layer"), those layers
are cut into contiguous runs in proportion to each GPU's free memory, llama.cpp's default
tensor split: layer il goes to the first GPU whose cumulative share exceeds
(il - first) / offloaded (`upper_bound` over the splits in llama_model::load_tensors).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """Blocks per GPU as [start, stop) runs; the output layer's GPU, or None for the CPU."""

    gpu_layers: int  # -ngl, clamped to n_layer + 1
    first_gpu_block: int  # blocks below this run on the CPU
    runs: tuple[tuple[int, int], ...]  # one run per GPU, possibly empty
    output_gpu: int | None

    @property
    def cpu_blocks(self) -> int:
        return self.first_gpu_block


def place(n_layer: int, gpu_layers: int, gpu_free: Sequence[int]) -> Placement:
    """Blocks per GPU for -ngl `gpu_layers` over GPUs with these free bytes."""
    n_gpu = len(gpu_free)
    ngl = max(0, min(gpu_layers, n_layer + 1)) if n_gpu else 0
    first = max(n_layer - ngl, 0)
    if ngl == 0:
        return Placement(0, n_layer, tuple((first, first) for _ in range(n_gpu)), None)
    total = sum(gpu_free)
    splits: list[float] = []
    running = 0
    for free in gpu_free:
        running += free
        splits.append(running / total if total > 0 else 1.0)

    def gpu_of(layer: int) -> int:
        # upper_bound: the first split strictly greater than the layer's position.
        return min(bisect_right(splits, (layer - first) / ngl), n_gpu - 1)

    # Each GPU's run ends where the next one's starts: the first layer it does not get.
    bounds = [first]
    for g in range(n_gpu - 1):
        stop = bounds[-1]
        while stop < n_layer and gpu_of(stop) <= g:
            stop += 1
        bounds.append(stop)
    bounds.append(n_layer)
    runs = tuple((bounds[g], bounds[g + 1]) for g in range(n_gpu))
    output_gpu = gpu_of(n_layer) if ngl > n_layer else None
    return Placement(ngl, first, runs, output_gpu)
