"""The chat history routes of a real daemon process, through the typed client and raw HTTP:
every operation, problems for what is missing or too large, the bound, a restart, a damaged
file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from roundhouse.api.chat import (
    MAX_MESSAGE_CHARS,
    ConversationUpdate,
    MessageEdit,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
)
from roundhouse.api.daemon import Problem
from roundhouse.client import ApiError, DaemonClient
from tests.daemon_process import DaemonProcess, running_daemon


def user(text: str) -> NewMessage:
    return NewMessage(role=Role.USER, content=text)


def http(daemon: DaemonProcess) -> httpx.Client:
    return httpx.Client(
        base_url=daemon.url + "/api/v1",
        headers={"Authorization": f"Bearer {daemon.token}"},
        timeout=30,
        trust_env=False,
    )


def problem(response: httpx.Response, status: int) -> Problem:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return Problem.model_validate_json(response.content)


def test_every_operation_through_the_client(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            params = SamplingParams(temperature=0.7)
            chat = await client.create_chat(NewConversation(model="m", params=params))
            assert chat.title == "New chat" and chat.params == params
            first = await client.add_message(chat.id, user("Trains\nand more"))
            stats = ReplyStats(ttft_ms=20.0, completion_tokens=5, stopped=True)
            reply = await client.add_message(
                chat.id,
                NewMessage(role=Role.ASSISTANT, content="Choo", reasoning="hm", stats=stats),
            )
            assert reply.stats == stats and reply.id > first.id
            other = await client.create_chat(NewConversation(title="Other"))
            listed = (await client.chats()).conversations
            assert [c.id for c in listed] == [other.id, chat.id]
            assert listed[1].title == "Trains" and listed[1].message_count == 2
            assert [c.id for c in (await client.chats(limit=1)).conversations] == [other.id]

            edited = await client.edit_message(chat.id, first.id, MessageEdit(content="Boats"))
            assert edited.content == "Boats"
            renamed = await client.update_chat(chat.id, ConversationUpdate(system_prompt="S"))
            assert renamed.system_prompt == "S" and renamed.title == "Boats"
            assert renamed.model == "m" and renamed.params == params

            await client.delete_messages_from(chat.id, reply.id)
            assert [m.content for m in (await client.chat(chat.id)).messages] == ["Boats"]
            await client.delete_chat(other.id)
            with pytest.raises(ApiError) as caught:
                await client.chat(other.id)
            assert caught.value.status == 404 and other.id in str(caught.value)

    asyncio.run(scenario())


def test_status_codes_and_problems_over_http(daemon: DaemonProcess) -> None:
    with http(daemon) as client:
        created = client.post("/chats", json={"messages": [{"role": "user", "content": "hi"}]})
        assert created.status_code == 201, created.text
        chat_id = created.json()["id"]
        message_id = created.json()["messages"][0]["id"]
        assert "not found" in problem(client.get("/chats/nope"), 404).title.lower()
        problem(client.delete(f"/chats/{chat_id}/messages/{message_id + 5}"), 404)
        problem(client.put(f"/chats/nope/messages/{message_id}", json={"content": "x"}), 404)
        too_long = {"role": "user", "content": "x" * (MAX_MESSAGE_CHARS + 1)}
        assert (
            "content"
            in problem(client.post(f"/chats/{chat_id}/messages", json=too_long), 422).detail
        )
        problem(
            client.post(f"/chats/{chat_id}/messages", json={"role": "robot", "content": ""}), 422
        )
        problem(client.get("/chats", params={"limit": 0}), 422)
        # Nothing above changed the conversation.
        assert client.get(f"/chats/{chat_id}").json()["message_count"] == 1
        deleted = client.delete(f"/chats/{chat_id}/messages/{message_id}")
        assert deleted.status_code == 204 and not deleted.content
        assert client.delete(f"/chats/{chat_id}").status_code == 204
        problem(client.delete(f"/chats/{chat_id}"), 404)


def test_the_bound_holds_and_the_history_survives_a_restart(home_root: Path) -> None:
    with running_daemon(home_root) as daemon, http(daemon) as client:
        settings = client.get("/settings").json()
        settings["chat"]["max_conversations"] = 10
        assert client.put("/settings", json=settings).status_code == 200
        ids = [client.post("/chats", json={"title": f"c{i}"}).json()["id"] for i in range(12)]
        listed = [c["id"] for c in client.get("/chats").json()["conversations"]]
        assert listed == ids[::-1][:10]
    assert (home_root / "data" / "chat.sqlite3").is_file()
    with running_daemon(home_root) as daemon, http(daemon) as client:
        again = [c["id"] for c in client.get("/chats").json()["conversations"]]
        assert again == listed


def test_a_damaged_file_costs_the_chat_not_the_daemon(home_root: Path) -> None:
    chat_file = home_root / "data" / "chat.sqlite3"
    chat_file.parent.mkdir(parents=True)
    chat_file.write_bytes(b"\x00garbage, not SQLite " * 500)
    with running_daemon(home_root) as daemon, http(daemon) as client:
        assert client.get("/status").status_code == 200
        found = problem(client.get("/chats"), 500)
        assert str(chat_file) in found.detail and "Move it away" in found.detail
        assert client.get("/status").status_code == 200
        chat_file.rename(chat_file.with_suffix(".damaged"))
        assert client.get("/chats").json() == {"conversations": []}
        assert client.post("/chats", json={}).status_code == 201
