"""A "llama-server" that stays loading: /health answers 503 on llama-server's --port."""

import sys

from _serve import serve

serve(int(sys.argv[sys.argv.index("--port") + 1]), 503)
