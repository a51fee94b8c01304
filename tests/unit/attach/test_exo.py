"""exo: its command lines, its model list told from others', its placed models read from its
cluster state, and why the scan leaves a real exo (listening on every address) out."""

from __future__ import annotations

from typing import Any

import psutil
import pytest

from roundhouse.api.engines import EngineId
from roundhouse.core.engines.attach.cmdline import match_cmdline, process_patterns
from roundhouse.core.engines.attach.scan import _left_out
from roundhouse.core.engines.catalog import load_catalog
from roundhouse.core.engines.exo import is_exo_model_list, served_models

PATTERNS = process_patterns(load_catalog())


@pytest.mark.parametrize(
    "argv",
    [
        ["/Users/me/exo/.venv/bin/python3", "/Users/me/exo/.venv/bin/exo"],
        ["/Users/me/exo/.venv/bin/exo", "--api-port", "52416"],
        ["python", "-m", "exo", "-v"],
    ],
)
def test_exo_command_lines_are_exo(argv: list[str]) -> None:
    found = match_cmdline(argv, PATTERNS)
    assert found is not None and found.engine == EngineId.EXO


def test_exo_model_cards_are_told_from_another_servers_list() -> None:
    cards = {
        "object": "list",
        "data": [{"id": "a", "owned_by": "exo"}, {"id": "b", "owned_by": "exo"}],
    }
    assert is_exo_model_list(cards)
    assert not is_exo_model_list({"data": [{"id": "a", "owned_by": "vllm"}]})
    assert not is_exo_model_list({"data": [{"id": "a", "owned_by": "exo"}, {"id": "b"}]})
    assert not is_exo_model_list({"data": []})
    assert not is_exo_model_list(["exo"])


def _instance(kind: str, model: Any) -> dict[str, Any]:
    return {kind: {"instanceId": "i", "shardAssignments": {"modelId": model, "runnerToShard": {}}}}


def test_served_models_are_those_of_placed_instances_each_once() -> None:
    state = {
        "1": _instance("MlxRingInstance", "mlx-community/A"),
        "2": _instance("MlxJacclInstance", "mlx-community/B"),
        "3": _instance("MlxRingInstance", "mlx-community/A"),
        "4": {"MlxRingInstance": {"shardAssignments": {}}},
        "5": {"two": {}, "tags": {}},
        "6": _instance("MlxRingInstance", 7),
    }
    assert served_models(state) == ["mlx-community/A", "mlx-community/B"]
    assert served_models({}) == [] and served_models(None) == []


def test_an_exo_on_every_address_is_left_out_with_how_to_attach_it() -> None:
    spec = load_catalog().spec(EngineId.EXO)
    me = psutil.Process()
    why = _left_out(me, [("0.0.0.0", 52415)], ["exo"], spec)
    assert why is not None and "roundhouse engines attach http://127.0.0.1:52415" in why
    # Unseen sockets: exo's default is every address, so the command line alone says so.
    assert _left_out(me, [], ["exo", "--api-port", "52416"], spec) is not None
    assert _left_out(me, [("127.0.0.1", 52415)], ["exo"], spec) is None
