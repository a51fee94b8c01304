"""vLLM and SGLang are told which hosts they may fetch media from (gateway.media_domains),
from the versions that have the option; an empty list becomes a name no URL has."""

from __future__ import annotations

import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams, LaunchPlan
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.errors import InvalidInputError
from tests.unit.engines.conftest import catalog

HOSTS = ("upload.wikimedia.org", "images.example.com")


def _plan(engine: EngineId, version: str | None, hosts: tuple[str, ...] = HOSTS) -> LaunchPlan:
    spec = catalog().spec(engine)
    python = "/srv/venv/bin/python"
    detected = DetectedEngine(
        id=engine,
        found_by=FoundBy.PYTHON,
        python=python,
        module=spec.python_modules[0],
        version=version,
        where="test",
    )
    params = LaunchParams(model="org/model", port=41010)
    return build_launch(spec, detected, params, media_domains=hosts)


def _allowed(plan: LaunchPlan) -> list[str] | None:
    argv = list(plan.argv)
    if "--allowed-media-domains" not in argv:
        return None
    at = argv.index("--allowed-media-domains") + 1
    return [a for a in argv[at:] if not a.startswith("--")]


@pytest.mark.parametrize(
    ("engine", "version"),
    [(EngineId.VLLM, "0.11.0"), (EngineId.VLLM, "0.19.1"), (EngineId.SGLANG, "0.5.20")],
)
def test_new_enough_engines_get_the_allowed_hosts(engine: EngineId, version: str) -> None:
    plan = _plan(engine, version)
    assert _allowed(plan) == list(HOSTS)
    # The flag comes last of Roundhouse's own, right before the user's extra arguments.
    assert plan.argv[-3] == "--allowed-media-domains"


@pytest.mark.parametrize(
    ("engine", "version"), [(EngineId.VLLM, "0.11.2"), (EngineId.SGLANG, "0.6.1")]
)
def test_with_no_host_allowed_they_get_a_name_no_url_has(engine: EngineId, version: str) -> None:
    # Both engines read an empty list as "every host".
    assert _allowed(_plan(engine, version, ())) == ["none.invalid"]


def test_vllm_is_kept_from_following_redirects_away_from_an_allowed_host() -> None:
    assert _plan(EngineId.VLLM, "0.11.0").env["VLLM_MEDIA_URL_ALLOW_REDIRECTS"] == "0"
    assert "VLLM_MEDIA_URL_ALLOW_REDIRECTS" not in _plan(EngineId.VLLM, "0.10.2").env


@pytest.mark.parametrize(
    ("engine", "version"),
    [
        (EngineId.VLLM, "0.10.1.1"),
        (EngineId.VLLM, None),
        (EngineId.SGLANG, "0.5.19"),
        (EngineId.SGLANG, None),
    ],
)
def test_older_or_unknown_versions_get_no_flag_they_would_refuse(
    engine: EngineId, version: str | None
) -> None:
    assert _allowed(_plan(engine, version)) is None


@pytest.mark.parametrize("engine", [EngineId.VLLM, EngineId.SGLANG])
def test_the_flag_is_roundhouses_not_an_extra_argument(engine: EngineId) -> None:
    spec = catalog().spec(engine)
    detected = DetectedEngine(id=engine, found_by=FoundBy.PATH, path="/bin/x", where="test")
    params = LaunchParams(
        model="org/model", port=1, extra_args=("--allowed-media-domains", "evil.net")
    )
    with pytest.raises(InvalidInputError, match="allowed-media-domains"):
        build_launch(spec, detected, params)
