"""How coding agents and client libraries are pointed at the gateway: the table and its filler.

One table (resources/clients.toml) says, per client, which environment variables, arguments
or snippet point it at a base URL, a key and a model. `roundhouse launch` starts the agents
with it; the app's Use with… panel shows every client's settings from it. Both fill it here,
so the words a user copies and the environment an agent gets cannot drift apart.
"""

from __future__ import annotations

import json
import shlex
from enum import StrEnum
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from roundhouse.base.resources import read_toml, resource_path

TABLE_FILE = "clients.toml"
SCHEMA = 1
# Sent when the gateway has no key: it accepts any key on loopback then, and agents such as
# Claude Code ask for a login when they have none.
PLACEHOLDER_KEY = "roundhouse"
_PLACES = ("root", "v1", "key", "model")
# A key is shown as its first and last few characters unless the user asks to see it.
_MASK_KEEP = 4


class ClientTableError(RuntimeError):
    """The clients table is missing or wrong: the installation is broken."""


class ClientKind(StrEnum):
    AGENT = "agent"
    SDK = "sdk"
    APP = "app"


EnvValue = str | dict[str, Any]


class ClientSpec(BaseModel):
    """One client's row of the table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    kind: ClientKind
    api: str = Field(min_length=1, description="the API the client speaks to the gateway")
    docs: str = Field(min_length=1)
    command: str | None = Field(default=None, description="the agent's executable")
    install: str | None = Field(default=None, description="how to install the agent")
    env: dict[str, EnvValue] = Field(default_factory=dict)
    args: list[str] = Field(default_factory=list)
    unset: list[str] = Field(default_factory=list)
    snippet: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> ClientSpec:
        if self.kind is ClientKind.AGENT and not (self.command and self.install):
            raise ValueError("an agent needs `command` and `install`")
        if self.kind is not ClientKind.AGENT and not self.snippet:
            raise ValueError("a client that is not an agent needs a `snippet`")
        # Every placeholder must be one the filler knows: a typo fails at load, not at launch.
        probe = GatewayTarget(root="http://h", key="k", model="m")
        setup_for(self, probe)
        if self.snippet:
            _fill(self.snippet, probe)
        return self


class GatewayTarget(BaseModel):
    """What a client is pointed at: the gateway's root address, a key and a model."""

    model_config = ConfigDict(frozen=True)

    root: str = Field(description="the gateway's address without a path")
    key: str
    model: str

    @property
    def v1(self) -> str:
        return self.root.rstrip("/") + "/v1"


class ClientSetup(BaseModel):
    """An agent's launch, filled in: variables to set and remove, arguments to put first."""

    model_config = ConfigDict(frozen=True)

    env: dict[str, str]
    unset: list[str]
    args: list[str]


def _places(target: GatewayTarget) -> dict[str, str]:
    plain = {"root": target.root.rstrip("/"), "v1": target.v1, "key": target.key}
    plain["model"] = target.model
    # Unicode kept as it is (a masked key shows its dots), valid in JSON and TOML alike.
    quoted = {f"{name}_q": json.dumps(value, ensure_ascii=False) for name, value in plain.items()}
    return plain | quoted


def _fill(template: str, target: GatewayTarget) -> str:
    try:
        return Template(template).substitute(_places(target))
    except (KeyError, ValueError) as exc:
        known = ", ".join(f"${{{p}}}" for p in _PLACES)
        raise ValueError(f"unknown placeholder in {template!r} ({exc}); known: {known}") from exc


def _fill_tree(value: Any, target: GatewayTarget) -> Any:
    if isinstance(value, str):
        return _fill(value, target)
    if isinstance(value, dict):
        return {_fill(k, target): _fill_tree(v, target) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_tree(v, target) for v in value]
    return value


def setup_for(spec: ClientSpec, target: GatewayTarget) -> ClientSetup:
    """The environment and arguments that point `spec`'s agent at `target`."""
    env: dict[str, str] = {}
    for name, value in spec.env.items():
        filled = _fill_tree(value, target)
        env[name] = filled if isinstance(filled, str) else json.dumps(filled, separators=(",", ":"))
    args = [_fill(arg, target) for arg in spec.args]
    return ClientSetup(env=env, unset=list(spec.unset), args=args)


def mask_key(key: str) -> str:
    """The key with its middle hidden; a short key is hidden whole."""
    if len(key) <= 3 * _MASK_KEEP:
        return "•" * 8
    return key[:_MASK_KEEP] + "•" * 8 + key[-_MASK_KEEP:]


def shell_lines(spec: ClientSpec, setup: ClientSetup, extra: list[str] | None = None) -> str:
    """The launch as POSIX shell lines, ready to paste: unset, export, then the command."""
    lines = [f"unset {' '.join(shlex.quote(n) for n in setup.unset)}"] if setup.unset else []
    lines += [f"export {name}={shlex.quote(value)}" for name, value in setup.env.items()]
    if spec.command:
        lines.append(shlex.join([spec.command, *setup.args, *(extra or [])]))
    return "\n".join(lines)


def client_text(spec: ClientSpec, target: GatewayTarget) -> str:
    """What the user copies for `spec`: an agent's shell lines, or the client's snippet."""
    if spec.snippet is not None:
        return _fill(spec.snippet, target).strip("\n")
    return shell_lines(spec, setup_for(spec, target))


def parse_table(data: dict[str, Any], source: str) -> dict[str, ClientSpec]:
    """The table's rows by id; ClientTableError naming the row and what is wrong."""
    if data.get("schema") != SCHEMA:
        raise ClientTableError(f"{source}: expected `schema = {SCHEMA}`.")
    rows = data.get("clients")
    if not isinstance(rows, dict) or not rows:
        raise ClientTableError(f"{source}: no [clients.*] tables.")
    table: dict[str, ClientSpec] = {}
    for client_id, row in rows.items():
        try:
            table[client_id] = ClientSpec.model_validate(row)
        except ValidationError as exc:
            raise ClientTableError(f"{source}: [clients.{client_id}]: {exc}") from exc
    return table


@cache
def client_table(path: Path | None = None) -> dict[str, ClientSpec]:
    """The bundled clients table (or the one at `path`), read and checked once."""
    source = path or resource_path(TABLE_FILE)
    return parse_table(read_toml(source, "clients table", ClientTableError), str(source))


def agents() -> dict[str, ClientSpec]:
    return {cid: spec for cid, spec in client_table().items() if spec.kind is ClientKind.AGENT}
