"""A STAND-IN for PyPI's JSON API (`GET /pypi/<name>/json`), in a thread, counting requests.

It answers the way pypi.org does for a released package (`info.version` and a `releases`
table), or on demand with something malformed or an HTTP error. Every request is logged with
its method, path and headers, so tests can assert what the update check sent, and that it
sent nothing at all while the setting is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.fakes.http_plumbing import Logged, StandinHandler, ThreadedStandin

PACKAGE = "roundhouse"


@dataclass
class PypiStandin(ThreadedStandin):
    """`with PypiStandin("9.9.9") as pypi:` serves on 127.0.0.1; `pypi.url` is the JSON page."""

    latest: str = "9.9.9"
    # "json" answers like PyPI, "not-json" with HTML, "no-version" with JSON lacking it.
    answer: str = "json"
    status: int = 200
    log: list[Logged] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._serve(_make_handler(self))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/pypi/{PACKAGE}/json"

    def page(self) -> dict[str, object]:
        files = [{"filename": f"{PACKAGE}-{self.latest}-py3-none-any.whl", "yanked": False}]
        return {
            "info": {"name": PACKAGE, "version": self.latest, "yanked": False},
            "releases": {"0.1.0": [], self.latest: files},
            "urls": files,
        }


def _make_handler(pypi: PypiStandin) -> type[StandinHandler]:
    class Handler(StandinHandler):
        def do_GET(self) -> None:
            pypi.record(Logged("GET", self.path, dict(self.headers.items())))
            if self.path != f"/pypi/{PACKAGE}/json":
                self.send_json(404, {"message": "Not Found"})
            elif pypi.status != 200:
                self.send_json(pypi.status, {"message": "stand-in failure"})
            elif pypi.answer == "not-json":
                self.send_bytes(200, b"<html>maintenance</html>", "text/html")
            elif pypi.answer == "no-version":
                self.send_json(200, {"info": {"name": PACKAGE}})
            else:
                self.send_json(200, pypi.page())

        def do_POST(self) -> None:
            pypi.record(Logged("POST", self.path, dict(self.headers.items())))
            self.send_json(405, {"message": "Method Not Allowed"})

        def log_message(self, format: str, *args: object) -> None:
            return  # quiet: the log list is what tests read

    return Handler
