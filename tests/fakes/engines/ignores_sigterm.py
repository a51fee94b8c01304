"""Ready at once, but ignores SIGTERM, as does the worker it starts: both must be killed."""

import signal
import subprocess
import sys

from _serve import serve

signal.signal(signal.SIGTERM, signal.SIG_IGN)
worker = subprocess.Popen(
    [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
    ]
)
print(f"worker pid {worker.pid}", flush=True)
serve(int(sys.argv[1]), 200)
