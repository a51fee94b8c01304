"""huggingface_hub's errors become Roundhouse errors in words, each with what to do."""

from __future__ import annotations

import httpx2
import pytest
from huggingface_hub import errors as hf

from roundhouse.api.downloads import DownloadRequest
from roundhouse.core.errors import InvalidInputError, NotFoundError, RoundhouseError
from roundhouse.core.models.downloads.errors import HubAccessError
from roundhouse.core.models.downloads.resolve import HubResolver
from roundhouse.core.models.hub.errors import (
    GatedModelError,
    HubTokenError,
    HubUnavailableError,
    HubUnreachableError,
    hub_errors,
)
from tests.processes import free_port

URL = "https://huggingface.co/api/models/org/name"


def response(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=httpx2.Request("GET", URL))


@pytest.mark.parametrize(
    ("raised", "expected", "words"),
    [
        (hf.GatedRepoError("gated", response=response(403)), GatedModelError, "accept its license"),
        (hf.RepositoryNotFoundError("x", response=response(404)), NotFoundError, "No model named"),
        (hf.RevisionNotFoundError("x", response=response(404)), NotFoundError, "no revision 'v2'"),
        (hf.DisabledRepoError("x", response=response(403)), NotFoundError, "was disabled"),
        (hf.HfHubHTTPError("x", response=response(401)), HubTokenError, "expired or revoked"),
        (hf.HfHubHTTPError("x", response=response(500)), HubUnavailableError, "HTTP 500"),
        (hf.OfflineModeIsEnabled("offline"), HubUnavailableError, "HF_HUB_OFFLINE"),
        (httpx2.ConnectError("[Errno 111] refused"), HubUnavailableError, "Cannot reach"),
        (
            httpx2.ConnectError("[Errno 111] Connection refused"),
            HubUnreachableError,
            "refused the connection about org/name",
        ),
        (
            httpx2.ConnectError("[Errno -2] Name or service not known"),
            HubUnreachableError,
            "Hugging Face could not be looked up about org/name: this machine seems",
        ),
        (httpx2.ReadTimeout("timed out"), HubUnavailableError, "did not answer in time"),
        (hf.HFValidationError("bad id"), InvalidInputError, "owner/name"),
    ],
)
def test_mapping(raised: Exception, expected: type[RoundhouseError], words: str) -> None:
    with pytest.raises(expected) as caught, hub_errors("org/name", "v2"):
        raise raised
    assert words in caught.value.detail
    assert caught.value.__cause__ is raised
    assert "Traceback" not in caught.value.detail
    assert "Errno" not in caught.value.detail


def test_gated_message_links_the_hub_in_use() -> None:
    with pytest.raises(GatedModelError) as caught, hub_errors("org/name", site="http://hub:1/"):
        raise hf.GatedRepoError("gated", response=response(403))
    assert "http://hub:1/org/name" in caught.value.detail


def test_other_errors_pass_through() -> None:
    with pytest.raises(KeyError), hub_errors("org/name"):
        raise KeyError("a bug stays a bug")


def test_a_download_with_no_connection_says_so_in_words() -> None:
    resolve = HubResolver(f"http://127.0.0.1:{free_port()}")
    request = DownloadRequest(repo="org/name", files=["model.gguf"])
    with pytest.raises(HubAccessError) as caught:
        resolve(request, None)
    assert "refused the connection about org/name" in caught.value.detail
    assert "Errno" not in caught.value.detail
