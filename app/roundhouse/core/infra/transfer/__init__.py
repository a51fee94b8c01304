"""One resumable, verified HTTP transfer (aiohttp) for model downloads and engine installs.

`fetch` moves the bytes (Range resume, If-Range, retries with backoff), `writer` puts them in
the partial file, `verify` checks the finished file and sets a bad one aside, `rate` measures
the speed, and `words` holds the sentences a caller tells each failure in.
"""
