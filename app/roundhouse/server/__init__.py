"""The daemon's HTTP side: control API, live streams, and the process that runs them."""
