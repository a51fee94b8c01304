"""Alive but never ready: /health always answers 503."""

import sys

from _serve import serve

serve(int(sys.argv[1]), 503)
