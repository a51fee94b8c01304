"""Prints numbered lines, a secret from its environment and a %-sign, then exits 0."""

import os
import sys

for i in range(int(sys.argv[2])):
    print(f"line {i} 100%", flush=False)
print(f"key is {os.environ.get('FAKE_API_KEY', '')}", flush=True)
