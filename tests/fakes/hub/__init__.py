"""A STAND-IN for the Hugging Face Hub (huggingface.co and its LFS CDN), run as a real process.

It speaks the Hub's HTTP API well enough for the real `huggingface_hub` client and for
Range downloaders: `/api/models` (search, filter, sort, pagination by `Link`),
`/api/models/{id}[/revision/{rev}]`, `/tree/{rev}[/{path}]`, `/paths-info/{rev}`,
`/api/whoami-v2`, and `HEAD|GET /{id}/resolve/{rev}/{path}` with `X-Repo-Commit`, ETag,
Range (206/416), If-Range, and for LFS files a 302 to a second listener on another port
(the "CDN") with `X-Linked-Etag`/`X-Linked-Size`. Errors carry `X-Error-Code` (RepoNotFound,
RevisionNotFound, EntryNotFound, GatedRepo). No xet: set `HF_HUB_DISABLE_XET=1`.

Use from tests:

    from tests.fakes.hub import running_hub, hub_env
    from tests.fakes.hub.build import build_test_repos, GGUF_REPO, ACCESS_TOKEN

    with running_hub(build_test_repos(tmp_path / "repos")) as hub:
        api = HfApi(endpoint=hub.base_url)                 # or env=hub_env(hub) for a subprocess
        hub.set_faults({"path": "*.gguf", "drop_after": 4096, "times": 1})
        ...
        assert any("Range" in r["headers"] for r in hub.requests(server="cdn"))

or the pytest fixtures in tests.fakes.hub.fixtures (`fake_hub`: a session-wide server, reset
before each test; `fake_hub_url`). Repos are folders `DIR/<org>/<name>/` plus an optional
`DIR/hub.json` (see catalog.py); faults and run-time settings are in faults.py and control.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO_ROOT = Path(__file__).resolve().parents[3]


class ControlError(RuntimeError):
    """A `/_fake/...` call was refused (bad fault keys, unknown setting, ...)."""


@dataclass
class HubStandin:
    """A running fake Hub: its URLs, its control endpoints, and how to stop it."""

    proc: subprocess.Popen[bytes]
    base_url: str  # give this to huggingface_hub as `endpoint=` or HF_ENDPOINT
    cdn_url: str
    repos: Path
    log: Path

    def resolve_url(self, repo_id: str, path: str, revision: str = "main") -> str:
        """`{base}/{repo}/resolve/{revision}/{path}`, as `huggingface_hub.hf_hub_url` builds it."""
        return f"{self.base_url}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"

    def control(self, method: str, what: str, body: object = None) -> Any:
        """Call `/_fake/<what>` and return its JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base_url}/_fake/{what}", data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            detail = json.loads(exc.read() or b"{}").get("error", exc.reason)
            raise ControlError(f"{method} /_fake/{what}: {detail}") from exc

    def set_faults(self, *faults: dict[str, Any]) -> None:
        """Replace the fault rules (keys in faults.Fault), e.g. `{"path": "x.gguf",
        "corrupt": True}`; none: clear them."""
        self.control("POST", "faults", list(faults))

    def clear_faults(self) -> None:
        self.control("DELETE", "faults")

    def requests(self, server: str | None = None) -> list[dict[str, Any]]:
        """The request log, oldest first: dicts with server ("hub"/"cdn"), method, path,
        query, headers, status, and sent (file body bytes, set once the body is out)."""
        return list(self.control("GET", "requests" + (f"?server={server}" if server else "")))

    def clear_requests(self) -> None:
        self.control("DELETE", "requests")

    def set_settings(self, **settings: Any) -> dict[str, Any]:
        """Change `redirect_lfs`, `page_size` or `tree_page_size` until reset."""
        return dict(self.control("POST", "settings", settings))

    def reload(self) -> None:
        """Rescan the repos folder after a test changed it."""
        self.control("POST", "reload")

    def reset(self) -> None:
        """No faults, an empty log, the settings it started with."""
        self.control("POST", "reset")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM, then SIGKILL the group if it lingers; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def start_hub(
    repos: Path,
    *flags: str,
    state: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> HubStandin:
    """Start `python -m tests.fakes.hub --repos REPOS --port 0 ...` in its own session and
    wait until it has bound both ports (hashing big files first can take a few seconds).

    `flags`: `--no-redirect`, `--page-size N`, `--tree-page-size N`, `--token T`,
    `--port N`, `--cdn-port N`. `state` holds the log and ready file (default: `repos`)."""
    state = state or repos
    state.mkdir(parents=True, exist_ok=True)
    log, ready = state / "fake-hub.log", state / f"fake-hub-{time.monotonic_ns()}.ready"
    argv = [sys.executable, "-m", "tests.fakes.hub", "--repos", str(repos), "--port", "0"]
    argv += ["--ready-file", str(ready), *flags]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env={**os.environ, **(env or {})}, stdout=out, stderr=out,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            standin = HubStandin(proc, "", "", repos, log)
            standin.stop()
            raise RuntimeError(f"fake Hub did not start: {standin.log_text()}")
        time.sleep(0.02)
    urls = json.loads(ready.read_text(encoding="utf-8"))
    ready.unlink()
    return HubStandin(proc, urls["hub"], urls["cdn"], repos, log)


@contextmanager
def running_hub(repos: Path, *flags: str, **kwargs: Any) -> Iterator[HubStandin]:
    """`start_hub`, stopped when the block ends."""
    hub = start_hub(repos, *flags, **kwargs)
    try:
        yield hub
    finally:
        hub.stop()


def hub_env(hub: HubStandin) -> dict[str, str]:
    """Environment for a subprocess (e.g. the daemon) that should use this Hub."""
    return {
        "HF_ENDPOINT": hub.base_url,
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    }
