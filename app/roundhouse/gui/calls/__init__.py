"""The GUI's calls of the daemon, one module per concern, and `op` that runs them for a widget.

A call group (`ModelsCalls`, `ChatCalls`, ...) names each request in words and returns a Call
(answered once) or a Follow (a stream); a widget hands the Call to its `Ops` (calls/op.py),
which runs the success handler or shows the failure, so no failure is dropped.
"""
