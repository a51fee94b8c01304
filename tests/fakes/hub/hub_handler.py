"""The Hub listener: `/api/models...`, `/{repo}/resolve/...`, `/api/whoami-v2`, `/_fake/...`."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from tests.fakes.hub.catalog import Repo
from tests.fakes.hub.control import handle_control
from tests.fakes.hub.serving import BaseHandler
from tests.fakes.hub.views import (
    BadRequest,
    info_fields,
    list_fields,
    model_json,
    search_models,
    tree_entry,
    tree_paths,
)

INVALID_TOKEN = "Invalid credentials in Authorization header"
_DENIED = object()  # the request carried a token the Hub does not know: already answered


class HubHandler(BaseHandler):
    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_DELETE(self) -> None:
        self._route()

    def _route(self) -> None:
        segments, query = self.begin()
        try:
            if segments[0] == "_fake":
                handle_control(self, segments[1:], query)
                return
            paths_info = len(segments) == 6 and segments[4] == "paths-info"
            if self.command not in ("GET", "HEAD") and not (paths_info and self.command == "POST"):
                self.close_connection = True  # its body, if any, stays unread
                self.hub_error(405, None, f"{self.command} is not allowed here")
                return
            token = self._token()
            if token is _DENIED:
                return
            assert token is None or isinstance(token, str)
            if segments[:2] == ["api", "whoami-v2"]:
                self._whoami(token)
            elif segments[:2] == ["api", "models"] and len(segments) <= 3:
                self._list(query, token)
            elif segments[:2] == ["api", "models"] and len(segments) >= 4:
                self._model_api(segments[2:], query, token)
            elif len(segments) >= 5 and segments[2] == "resolve":
                self._resolve(f"{segments[0]}/{segments[1]}", segments[3], segments[4:], token)
            else:
                self.hub_error(404, None, "Sorry, we can't find the page you are looking for.")
        except (BadRequest, ValueError) as exc:  # ValueError: a number that is not one
            self.hub_error(400, None, str(exc))

    def _token(self) -> str | object | None:
        header = self.headers.get("Authorization")
        if header is None:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or token not in self.state.catalog.tokens:
            self.hub_error(401, None, INVALID_TOKEN)
            return _DENIED
        return token

    def _visible(self, repo_id: str, token: str | None) -> Repo | None:
        """The repo, or None after answering RepoNotFound (missing, or private and closed)."""
        repo = self.state.catalog.repos.get(repo_id)
        if repo is None or (repo.private and not self.state.catalog.can_open(token, repo)):
            self.hub_error(404, "RepoNotFound", "Repository not found")
            return None
        return repo

    def _revision_ok(self, repo: Repo, revision: str) -> bool:
        if revision in ("main", "refs/heads/main", repo.sha):
            return True
        self.hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return False

    # -- /api ----------------------------------------------------------------------------

    def _whoami(self, token: str | None) -> None:
        if token is None:
            self.hub_error(401, None, "Invalid username or password.")
            return
        access = {"displayName": "fake-hub", "role": "read"}
        self.send_json(
            200,
            {
                "type": "user",
                "id": "0" * 24,
                "name": "roundhouse-tester",
                "fullname": "Roundhouse Tester",
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": access},
            },
        )

    def _list(self, query: dict[str, list[str]], token: str | None) -> None:
        catalog = self.state.catalog
        fields = list_fields(query)
        visible = [r for r in catalog.repos.values() if not r.private or catalog.can_open(token, r)]
        found = search_models(visible, query)
        limit = query.get("limit", [""])[-1]
        per_page = self.state.settings.page_size
        if limit:
            per_page = min(per_page, max(int(limit), 1))
        self._page([model_json(r, fields) for r in found], per_page, query)

    def _page(self, items: list[Any], per_page: int, query: dict[str, list[str]]) -> None:
        """One page from `cursor` on, with `Link: <...>; rel="next"` if more remain."""
        offset = _decode_cursor(query.get("cursor", [""])[-1])
        page = items[offset : offset + per_page]
        headers: dict[str, str] = {}
        if offset + per_page < len(items):
            rest = [(k, v) for k, values in query.items() if k != "cursor" for v in values]
            rest.append(("cursor", _encode_cursor(offset + per_page)))
            host = self.headers.get("Host", "127.0.0.1")
            path = quote(str(self._entry["path"])) if self._entry else "/"
            headers["Link"] = f'<http://{host}{path}?{urlencode(rest)}>; rel="next"'
        self.send_json(200, page, headers)

    def _model_api(self, parts: list[str], query: dict[str, list[str]], token: str | None) -> None:
        repo = self._visible(f"{parts[0]}/{parts[1]}", token)
        if repo is None:
            return
        rest = parts[2:]
        if not rest or (rest[0] == "revision" and len(rest) == 2):
            if rest and not self._revision_ok(repo, rest[1]):
                return
            blobs = query.get("blobs", [""])[-1].lower() in ("1", "true")
            expand = query.get("expand", []) + query.get("expand[]", [])
            self.send_json(200, model_json(repo, info_fields(expand), blobs=blobs))
        elif rest[0] == "tree" and len(rest) >= 2:
            self._tree(repo, rest[1], "/".join(rest[2:]).strip("/"), query)
        elif rest[0] == "paths-info" and len(rest) == 2 and self.command == "POST":
            self._paths_info(repo, rest[1])
        elif rest == ["refs"]:
            branch = {"name": "main", "ref": "refs/heads/main", "targetCommit": repo.sha}
            self.send_json(200, {"branches": [branch], "converts": [], "tags": []})
        else:
            self.hub_error(404, None, "Sorry, we can't find the page you are looking for.")

    def _tree(self, repo: Repo, revision: str, under: str, query: dict[str, list[str]]) -> None:
        if not self._revision_ok(repo, revision):
            return
        recursive = query.get("recursive", [""])[-1].lower() in ("1", "true")
        expand = query.get("expand", [""])[-1].lower() in ("1", "true")
        paths = tree_paths(repo, under, recursive)
        if paths is None:
            headers = {"X-Repo-Commit": repo.sha}
            self.hub_error(404, "EntryNotFound", f"{under} does not exist on main", headers)
            return
        entries = [tree_entry(repo, p, expand=expand) for p in paths]
        self._page(entries, self.state.settings.tree_page_size, query)

    def _paths_info(self, repo: Repo, revision: str) -> None:
        if not self._revision_ok(repo, revision):
            return
        body = self.read_body()
        if self.headers.get("Content-Type", "").startswith("application/json"):
            data: dict[str, Any] = json.loads(body or b"{}")
            paths, expand = list(data.get("paths", [])), bool(data.get("expand"))
        else:
            form = parse_qs(body.decode(), keep_blank_values=True)
            paths = form.get("paths", [])
            expand = form.get("expand", [""])[-1].lower() in ("1", "true")
        known = repo.directories() | set(repo.files)
        found = [p.strip("/") for p in paths if p.strip("/") in known]
        self.send_json(200, [tree_entry(repo, p, expand=expand) for p in found])

    # -- /{repo}/resolve/{revision}/{path} ---------------------------------------------

    def _resolve(self, repo_id: str, revision: str, parts: list[str], token: str | None) -> None:
        repo = self._visible(repo_id, token)
        if repo is None or not self._revision_ok(repo, revision):
            return
        path = "/".join(parts)
        commit = {"X-Repo-Commit": repo.sha}
        if repo.gated and not self.state.catalog.can_open(token, repo):
            message = (
                f"Access to model {repo.id} is restricted. You must have access to it and be"
                " authenticated to access it. Please log in."
                if token is None
                else f"Access to model {repo.id} is restricted and you are not in the"
                f" authorized list. Visit https://huggingface.co/{repo.id} to ask for access."
            )
            self.hub_error(401 if token is None else 403, "GatedRepo", message, commit)
            return
        hub_file = repo.files.get(path)
        if hub_file is None:
            self.hub_error(404, "EntryNotFound", f"Entry not found: {path}", commit)
            return
        if hub_file.sha256 is not None and self.state.settings.redirect_lfs:
            host = (self.headers.get("Host") or "127.0.0.1").rsplit(":", 1)[0]
            location = f"http://{host}:{self.state.cdn_port}/repos/{repo.id}/{hub_file.sha256}"
            body = f"Found. Redirecting to {location}".encode()
            self.send_response(302)
            self.send_header("Location", location)
            for name, value in commit.items():
                self.send_header(name, value)
            self.send_header("ETag", f'"{hub_file.sha256}"')
            self.send_header("X-Linked-Etag", f'"{hub_file.sha256}"')
            self.send_header("X-Linked-Size", str(hub_file.size))
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)
            return
        self.send_file(repo, hub_file, commit)


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    if not cursor:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        if kind == "offset" and int(value) >= 0:
            return int(value)
    except ValueError:
        pass
    raise BadRequest("Invalid cursor")
