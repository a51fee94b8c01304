"""The daemon's HTTP side: control API, live streams, and the process that runs them.

How it is put together: `daemon.py` binds the socket and runs the process; `compose.py`, the
composition root, builds every service once at start (`DaemonState`, the settings in force,
the hardware and the engines, first; then instances, the job board, installs, chats and
chat turns, the model services, the gateway, benchmarks and A/B runs, metrics, the gateway's
other listeners, the update check, the change feed), starts them and closes them in order;
`services.py` holds them in `DaemonServices`; `deps.py` gives each to routes as a named
dependency (`instances: Instances`, `library: Library`), and `app.py` mounts the routes of
`routes/` behind the guards of `security.py` and `request_guard.py`. The model services
(`models_wiring.py`) open in a thread beside the server's start: their object exists from
the start and their dependencies wait for it. Nothing is built on first use or by a route;
a new service is a field, a line in `build_services`, and its start and close where it has
them.
"""
