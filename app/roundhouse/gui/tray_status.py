"""What the tray icon and its tooltip say: the connection, the instances served, failures."""

from __future__ import annotations

from dataclasses import dataclass

from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.icons import TrayState
from roundhouse.gui.widgets.instances_model import failure_in_words, model_name, status_in_words

STATE_WORDS = {
    ConnectionState.CONNECTED: "connected to the daemon",
    ConnectionState.CONNECTING: "looking for the daemon…",
    ConnectionState.STARTING: "starting the daemon…",
    ConnectionState.DISCONNECTED: "not connected to the daemon",
}
# Tooltips are small: past this many instances the rest are counted, not named.
MAX_NAMED = 5


def instance_label(info: InstanceInfo) -> str:
    """'tiny.gguf — llama.cpp'; an attached server by the name the user gave it; an engine
    of many models (Ollama) by its name alone."""
    engine = info.engine.value
    if info.name and info.name != engine:
        engine = f"{engine}: {info.name}"
    return f"{model_name(info.model)} — {engine}" if info.model else engine


def instance_menu_text(info: InstanceInfo) -> str:
    """'tiny.gguf — llama.cpp, ready' (a failure is cut short: the tooltip has it whole)."""
    status = "failed" if info.status == InstanceStatus.FAILED else status_in_words(info)
    return f"{instance_label(info)}, {status}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class TrayStatus:
    state: TrayState
    tooltip: str
    serving: int = 0


def tray_status(
    connection: ConnectionState, message: str, instances: list[InstanceInfo] | None
) -> TrayStatus:
    """The icon's state and tooltip for this connection and instance list."""
    if connection != ConnectionState.CONNECTED:
        tip = f"Roundhouse: {STATE_WORDS[connection]}"
        if connection == ConnectionState.DISCONNECTED and message:
            return TrayStatus(TrayState.ERROR, f"{tip}\n{message}")
        return TrayStatus(TrayState.IDLE, tip)
    listed = instances or []
    serving = [i for i in listed if i.status == InstanceStatus.READY]
    failed = [i for i in listed if i.status == InstanceStatus.FAILED]
    others = [i for i in listed if i not in serving and i not in failed]
    if serving:
        head = f"Roundhouse: serving {plural(len(serving), 'instance')}"
    else:
        head = "Roundhouse: connected, no model served"
    lines = [head]
    lines += [f"{instance_label(i)}, ready" for i in serving]
    lines += [f"{instance_label(i)}, {status_in_words(i)}" for i in others]
    lines += [f"{instance_label(i)} failed: {failure_in_words(i)}" for i in failed]
    if len(lines) > MAX_NAMED + 1:
        lines = [*lines[: MAX_NAMED + 1], f"and {len(lines) - MAX_NAMED - 1} more"]
    if failed:
        state = TrayState.ERROR
    elif serving:
        state = TrayState.SERVING
    else:
        state = TrayState.CONNECTED
    return TrayStatus(state, "\n".join(lines), len(serving))
