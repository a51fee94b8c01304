"""Which files a request means, pinned to a commit, with sizes and digests (blocking calls to
the Hub through huggingface_hub; the service runs them in a thread)."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath

from huggingface_hub import HfApi
from huggingface_hub import errors as hf_errors
from huggingface_hub.file_download import get_hf_file_metadata, hf_hub_url
from huggingface_hub.hf_api import RepoFile

from roundhouse.api.downloads import DownloadRequest
from roundhouse.core.engines.projector import is_projector, pick_projector
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.models.downloads.errors import GatedRepoError, HubAccessError
from roundhouse.core.models.downloads.safety import (
    check_commit,
    check_repo_id,
    check_repo_path,
    check_revision,
    normalize_etag,
    parse_sha256,
)
from roundhouse.core.models.hub.errors import unreachable_error

MAX_FILES_PER_REQUEST = 1000
_HEAD_THREADS = 8
# huggingface_hub raises its HTTP library's errors for network failures (httpx in 1.x,
# httpx2 in 2.x); `errors.HTTPError` is that library's base class in both.
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    getattr(hf_errors, "HTTPError", hf_errors.HfHubHTTPError),
    OSError,
)


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    etag: str  # the blob's name in the cache
    sha256: str | None  # LFS files
    git_oid: str | None  # other files: git's blob id, checked after download


@dataclass(frozen=True)
class ResolvedRepo:
    repo: str
    revision: str
    commit: str
    files: tuple[RemoteFile, ...]


# (request, token) -> the files; blocking.
Resolver = Callable[[DownloadRequest, str | None], ResolvedRepo]


def check_request(request: DownloadRequest) -> None:
    check_repo_id(request.repo)
    check_revision(request.revision)
    if not request.files and not request.pattern:
        raise InvalidInputError(
            "Name the files to download, or give a pattern ('*Q4_K_M*.gguf'; '*' for all)."
        )
    for name in request.files:
        check_repo_path(name)


class HubResolver:
    """Resolves requests against a Hub endpoint (None: huggingface_hub's, HF_ENDPOINT)."""

    def __init__(self, endpoint: str | None = None) -> None:
        self.endpoint = endpoint

    def __call__(self, request: DownloadRequest, token: str | None) -> ResolvedRepo:
        check_request(request)
        api = HfApi(endpoint=self.endpoint)
        with _hub_errors(request.repo, request.revision):
            info = api.model_info(request.repo, revision=request.revision, token=token)
            commit = check_commit(info.sha or "")
            entries = [
                entry
                for entry in api.list_repo_tree(
                    request.repo, revision=commit, recursive=True, token=token
                )
                if isinstance(entry, RepoFile)
            ]
            chosen = _select(request, entries)
            with ThreadPoolExecutor(max(1, min(_HEAD_THREADS, len(chosen)))) as pool:
                etags = list(pool.map(lambda e: self._etag(request.repo, commit, e, token), chosen))
        files = tuple(
            RemoteFile(
                path=entry.path,
                size=entry.size,
                etag=etag,
                sha256=parse_sha256(entry.lfs.sha256) if entry.lfs is not None else None,
                git_oid=None if entry.lfs is not None else _git_oid(entry.blob_id),
            )
            for entry, etag in zip(chosen, etags, strict=True)
        )
        return ResolvedRepo(request.repo, request.revision, commit, files)

    def _etag(self, repo: str, commit: str, entry: RepoFile, token: str | None) -> str:
        """The ETag the Hub answers a HEAD with (what huggingface_hub names the blob)."""
        url = hf_hub_url(repo, entry.path, revision=commit, endpoint=self.endpoint)
        meta = get_hf_file_metadata(url, token=token, endpoint=self.endpoint)
        if meta.etag:
            return normalize_etag(meta.etag)
        if entry.lfs is not None:
            return parse_sha256(entry.lfs.sha256)
        return normalize_etag(entry.blob_id)


def _git_oid(blob_id: str | None) -> str | None:
    try:
        return check_commit(blob_id) if blob_id else None
    except InvalidInputError:
        return None  # an odd id is not checked; the size still is


def _select(request: DownloadRequest, entries: list[RepoFile]) -> list[RepoFile]:
    by_path = {entry.path: entry for entry in entries}
    missing = [name for name in request.files if name not in by_path]
    if missing:
        listed = ", ".join(sorted(by_path)[:20]) or "no files"
        raise NotFoundError(
            f"{request.repo} has no file {', '.join(map(repr, missing))} at {request.revision}. "
            f"It has: {listed}."
        )
    chosen = {name: by_path[name] for name in request.files}
    if request.pattern:
        for entry in entries:
            if fnmatch.fnmatchcase(entry.path, request.pattern):
                chosen.setdefault(entry.path, entry)
        if not any(fnmatch.fnmatchcase(e.path, request.pattern) for e in entries):
            raise NotFoundError(
                f"No file of {request.repo} matches {request.pattern!r}. Its files: "
                f"{', '.join(sorted(by_path)[:20]) or 'none'}."
            )
    if request.projector:
        chosen.update(projectors_for(list(chosen), entries))
    if len(chosen) > MAX_FILES_PER_REQUEST:
        raise InvalidInputError(
            f"That is {len(chosen):,} files; one request may add at most "
            f"{MAX_FILES_PER_REQUEST:,}. Narrow the pattern."
        )
    for name in chosen:
        check_repo_path(name)
    return list(chosen.values())


def projectors_for(chosen: list[str], entries: list[RepoFile]) -> dict[str, RepoFile]:
    """The vision projector that goes with each GGUF model chosen: the one llama-server
    would be given from the same folder of the repo, unless a projector there is chosen."""
    taken = {PurePosixPath(p).parent for p in chosen if is_projector(PurePosixPath(p).name)}
    added: dict[str, RepoFile] = {}
    for path in chosen:
        where = PurePosixPath(path)
        if not path.lower().endswith(".gguf") or is_projector(where.name) or where.parent in taken:
            continue
        beside = {
            PurePosixPath(e.path): e
            for e in entries
            if PurePosixPath(e.path).parent == where.parent
        }
        pick = pick_projector(beside)
        if pick is not None:
            added[str(pick)] = beside[pick]
            taken.add(where.parent)
    return added


@contextmanager
def _hub_errors(repo: str, revision: str) -> Iterator[None]:
    """huggingface_hub's errors in words that say what to do."""
    try:
        yield
    except hf_errors.GatedRepoError as exc:
        raise GatedRepoError(
            f"{repo} is a gated repository: accept its terms on huggingface.co/{repo}, store "
            "your Hugging Face token in Roundhouse, then try again."
        ) from exc
    except hf_errors.RepositoryNotFoundError as exc:
        raise NotFoundError(
            f"No repository {repo} on the Hub, or it is private: check the name, or store a "
            "Hugging Face token that may read it."
        ) from exc
    except hf_errors.RevisionNotFoundError as exc:
        raise NotFoundError(f"{repo} has no revision {revision!r}.") from exc
    except hf_errors.RemoteEntryNotFoundError as exc:
        raise NotFoundError(f"A file of {repo} vanished from the Hub meanwhile: {exc}") from exc
    except hf_errors.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        raise HubAccessError(
            f"The Hub answered HTTP {status} while listing {repo}: try again later."
        ) from exc
    except _NETWORK_ERRORS as exc:
        # No connection at all is said as such; the library's own text carries errno numbers.
        unreachable = unreachable_error(exc, None, repo)
        if unreachable is not None:
            raise HubAccessError(unreachable.detail) from exc
        raise HubAccessError(
            f"Cannot reach the Hugging Face Hub to list {repo}: the connection failed. "
            "Check the connection (and HF_HUB_OFFLINE), then try again."
        ) from exc
