"""The tray's icon and tooltip for a connection and an instance list, and the quick chat's
exchange as sent and as moved to the chat (pure logic: no daemon)."""

from __future__ import annotations

from roundhouse.api.chat import ReplyStats, Role
from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.gui.connection_state import ConnectionState
from roundhouse.gui.icons import TrayState
from roundhouse.gui.quick_chat_exchange import Exchange
from roundhouse.gui.tray_status import MAX_NAMED, instance_menu_text, tray_status


def _info(n: int, status: InstanceStatus, **extra: object) -> InstanceInfo:
    return InstanceInfo.model_validate(
        {
            "id": f"i{n}",
            "engine": EngineId.LLAMA_CPP,
            "model": f"/models/m{n}.gguf",
            "origin": InstanceOrigin.STARTED,
            "status": status,
            "host": "127.0.0.1",
            "port": 9000 + n,
            "url": f"http://127.0.0.1:{9000 + n}",
            "base_url": f"http://127.0.0.1:{9000 + n}/v1",
            "started_at": 0.0,
            **extra,
        }
    )


def test_not_connected_is_idle_and_a_failure_is_an_error() -> None:
    assert tray_status(ConnectionState.CONNECTING, "", None).state == TrayState.IDLE
    status = tray_status(ConnectionState.DISCONNECTED, "The daemon does not answer.", None)
    assert status.state == TrayState.ERROR
    assert status.tooltip.splitlines() == [
        "Roundhouse: not connected to the daemon",
        "The daemon does not answer.",
    ]


def test_serving_counts_ready_instances_and_lists_the_others() -> None:
    listed = [_info(1, InstanceStatus.READY), _info(2, InstanceStatus.LOADING, waited_s=3)]
    status = tray_status(ConnectionState.CONNECTED, "", listed)
    assert status.state == TrayState.SERVING and status.serving == 1
    assert status.tooltip.splitlines() == [
        "Roundhouse: serving 1 instance",
        "m1.gguf — llama.cpp, ready",
        "m2.gguf — llama.cpp, loading the model… 3 s",
    ]
    assert tray_status(ConnectionState.CONNECTED, "", []).state == TrayState.CONNECTED


def test_a_failed_instance_turns_it_red_and_long_lists_are_cut() -> None:
    listed = [_info(n, InstanceStatus.READY) for n in range(MAX_NAMED + 2)]
    listed.append(_info(99, InstanceStatus.FAILED, error="out of memory"))
    status = tray_status(ConnectionState.CONNECTED, "", listed)
    assert status.state == TrayState.ERROR
    lines = status.tooltip.splitlines()
    assert lines[0] == f"Roundhouse: serving {MAX_NAMED + 2} instances"
    assert len(lines) == MAX_NAMED + 2 and lines[-1] == "and 3 more"
    assert instance_menu_text(listed[-1]) == "m99.gguf — llama.cpp, failed"


def test_the_exchange_moves_whole_with_stopped_and_failed_replies() -> None:
    exchange = Exchange()
    first = exchange.ask("Hi\nthere")
    first.reply, first.stats = "Hello!", ReplyStats(completion_tokens=2)
    assert exchange.messages() == [{"role": "user", "content": "Hi\nthere"}]
    second = exchange.ask("More")
    second.stats = ReplyStats(stopped=True)
    third = exchange.ask("Again")
    third.error = "The gateway answered 503."
    assert exchange.messages()[:3] == [
        {"role": "user", "content": "Hi\nthere"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "More"},
    ]
    assert exchange.markdown().startswith(
        "**You:** Hi  \nthere\n\nHello!\n\n**You:** More\n\n*Stopped.*"
    )
    new = exchange.conversation("tiny")
    assert new.model == "tiny" and new.title is None
    assert [(m.role, m.content) for m in new.messages] == [
        (Role.USER, "Hi\nthere"),
        (Role.ASSISTANT, "Hello!"),
        (Role.USER, "More"),
        (Role.ASSISTANT, ""),
        (Role.USER, "Again"),
        (Role.ASSISTANT, ""),
    ]
    assert new.messages[3].stats is not None and new.messages[3].stats.stopped
    assert new.messages[5].stats is not None
    assert new.messages[5].stats.error == "The gateway answered 503."
    assert third.outcome() == "The reply failed." and second.outcome() == "Stopped."


def test_a_prompt_is_shown_as_typed_not_as_markdown() -> None:
    exchange = Exchange()
    exchange.ask("*not bold* and `not code` <b>")
    shown = exchange.markdown()
    assert shown.startswith("**You:** \\*not bold\\* and \\`not code\\` \\<b\\>")


def test_an_engine_without_one_model_is_named_by_its_engine() -> None:
    ollama = _info(1, InstanceStatus.READY, engine=EngineId.OLLAMA, model=None)
    assert instance_menu_text(ollama).startswith("ollama")
    assert "—" not in instance_menu_text(ollama).split(",")[0]
