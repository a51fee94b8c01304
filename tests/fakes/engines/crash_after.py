"""Answers 503 while "loading", then crashes with SIGSEGV after about a second."""

import os
import signal
import sys
import time

from _serve import serve

serve(int(sys.argv[1]), 503, background=True)
print("llama_model_load: loading tensors", flush=True)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
print("about to crash", flush=True)
if hasattr(signal, "SIGSEGV") and os.name != "nt":
    os.kill(os.getpid(), signal.SIGSEGV)
os.abort()
