"""`/_fake/...`: what tests use to steer the fake Hub without restarting it.

- `GET /_fake/health`: `{"ok": true, "repos": [...], "cdn": "http://..."}`
- `GET|POST|DELETE /_fake/faults`: read; replace with a list (or `{"faults": [...],
  "append": true}` to add); clear. See faults.Fault for the keys.
- `GET|DELETE /_fake/requests`: the request log (`?server=cdn` to keep one listener's); clear.
- `GET|POST /_fake/settings`: read; change some of `redirect_lfs`, `page_size`,
  `tree_page_size`.
- `POST /_fake/reload`: rescan the repos folder. `POST /_fake/reset`: no faults, an empty
  log, the settings the process started with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.fakes.hub.faults import Fault

if TYPE_CHECKING:
    from tests.fakes.hub.serving import BaseHandler


def handle_control(handler: BaseHandler, parts: list[str], query: dict[str, list[str]]) -> None:
    state = handler.state
    method = handler.command
    what = parts[0] if parts else ""
    try:
        if what == "health" and method == "GET":
            cdn = f"http://127.0.0.1:{state.cdn_port}"
            handler.send_json(200, {"ok": True, "repos": sorted(state.catalog.repos), "cdn": cdn})
        elif what == "faults":
            if method == "POST":
                _set_faults(handler, handler.read_json())
            elif method == "DELETE":
                state.faults.replace([])
            handler.send_json(200, state.faults.snapshot())
        elif what == "requests" and method in ("GET", "DELETE"):
            if method == "DELETE":
                state.log.clear()
            server = query.get("server", [""])[-1]
            entries = [e for e in state.log.entries() if not server or e["server"] == server]
            handler.send_json(200, entries)
        elif what == "settings" and method in ("GET", "POST"):
            if method == "POST":
                state.settings = state.settings.updated(handler.read_json())
            handler.send_json(200, state.settings.as_json())
        elif what == "reload" and method == "POST":
            state.reload()
            handler.send_json(200, {"repos": sorted(state.catalog.repos)})
        elif what == "reset" and method == "POST":
            state.reset()
            handler.send_json(200, {"ok": True})
        else:
            handler.send_json(404, {"error": f"no control {method} /_fake/{what}"})
    except (ValueError, TypeError) as exc:
        handler.send_json(400, {"error": str(exc)})


def _set_faults(handler: BaseHandler, body: Any) -> None:
    append = isinstance(body, dict) and bool(body.get("append"))
    items = body.get("faults", []) if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise ValueError('send a list of faults, or {"faults": [...], "append": true}')
    rules = [Fault.from_json(item) for item in items]
    if append:
        handler.state.faults.add(rules)
    else:
        handler.state.faults.replace(rules)
