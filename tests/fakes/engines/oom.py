"""Prints llama.cpp's out-of-memory errors and exits 1."""

import os
import sys

print(f"pid {os.getpid()}", flush=True)
print("llama_model_load_from_file_impl: using device CUDA0 (NVIDIA GeForce RTX 3060)", flush=True)
print(
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9120.00 MiB on device 0: "
    "cudaMalloc failed: out of memory",
    file=sys.stderr,
    flush=True,
)
print("llama_model_load: error loading model: unable to allocate CUDA0 buffer", file=sys.stderr)
print("main: exiting due to model loading error", file=sys.stderr, flush=True)
sys.exit(1)
