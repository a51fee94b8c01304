"""The clients table (resources/clients.toml): the bundled one loads, and a wrong row is
refused at load with its name and what is wrong, never at launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundhouse.api.clients import (
    ClientKind,
    ClientTableError,
    GatewayTarget,
    agents,
    client_table,
    client_text,
    mask_key,
    parse_table,
    setup_for,
)

TARGET = GatewayTarget(root="http://127.0.0.1:8080/", key="rh-0123456789abcdefXYZW", model='q"3')


def test_the_bundled_table_has_the_agents_and_the_clients_the_panel_shows() -> None:
    table = client_table()
    assert list(agents()) == ["claude", "codex", "opencode"]
    assert {"openai-python", "anthropic-python", "open-webui", "continue"} <= set(table)
    assert all(
        spec.kind is not ClientKind.AGENT for cid, spec in table.items() if cid not in agents()
    )


def test_quoted_placeholders_survive_a_model_name_with_quotes() -> None:
    codex = setup_for(client_table()["codex"], TARGET)
    assert codex.args[-1] == 'model="q\\"3"'
    assert 'model_providers.roundhouse.base_url="http://127.0.0.1:8080/v1"' in codex.args
    opencode = setup_for(client_table()["opencode"], TARGET)
    config = json.loads(opencode.env["OPENCODE_CONFIG_CONTENT"])
    assert (
        config["model"] == 'roundhouse/q"3' and 'q"3' in config["provider"]["roundhouse"]["models"]
    )
    sdk = client_text(client_table()["anthropic-python"], TARGET)
    assert 'base_url="http://127.0.0.1:8080"' in sdk and 'model="q\\"3"' in sdk


def test_a_key_is_masked_but_for_its_ends() -> None:
    assert mask_key("rh-0123456789abcdefXYZW") == "rh-0••••••••XYZW"
    assert mask_key("short") == "••••••••"


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (
            {"name": "X", "kind": "agent", "api": "a", "docs": "d", "install": "i"},
            "needs `command`",
        ),
        ({"name": "X", "kind": "sdk", "api": "a", "docs": "d"}, "needs a `snippet`"),
        (
            {"name": "X", "kind": "sdk", "api": "a", "docs": "d", "snippet": "${base_url}"},
            "unknown placeholder",
        ),
        ({"name": "X", "kind": "robot", "api": "a", "docs": "d", "snippet": "s"}, "kind"),
    ],
)
def test_a_wrong_row_is_refused_with_its_name(row: dict[str, str], words: str) -> None:
    with pytest.raises(ClientTableError, match=r"\[clients\.bad\]") as caught:
        parse_table({"schema": 1, "clients": {"bad": row}}, "t.toml")
    assert words in str(caught.value)


def test_a_table_of_another_schema_or_not_toml_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClientTableError, match="schema = 1"):
        parse_table({"schema": 2, "clients": {}}, "t.toml")
    broken = tmp_path / "clients.toml"
    broken.write_text("schema = ", encoding="utf-8")
    with pytest.raises(ClientTableError, match="not valid TOML"):
        client_table(broken)
