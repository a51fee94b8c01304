"""A "llama-server" that serves (ready, model listed), then crashes with SIGSEGV.

Reads --port from llama-server's own arguments; CRASH_AFTER_S (default 0.5) says when.
"""

import os
import signal
import sys
import time

from _serve import serve

port = int(sys.argv[sys.argv.index("--port") + 1])
serve(port, 200, background=True)
print("main: server is listening", flush=True)
time.sleep(float(os.environ.get("CRASH_AFTER_S", "0.5")))
print("about to crash", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
