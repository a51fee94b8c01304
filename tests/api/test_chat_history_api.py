"""The chat history's branches, search, export and import, and presets, through a real
daemon process: the typed client and raw HTTP, refusals in words."""

from __future__ import annotations

import asyncio
import json

import httpx

from roundhouse.api.chat import ChatExport, NewConversation, NewMessage, Role
from roundhouse.client import ApiError, DaemonClient
from tests.api.test_chats_api import http, problem
from tests.daemon_process import DaemonProcess

BRANCHED = {
    "format": "roundhouse-chat",
    "version": 1,
    "title": "Trains",
    "model": "m",
    "system_prompt": "Be brief.",
    "preset": "Brief",
    "created_at": 1_800_000_000.0,
    "updated_at": 1_800_000_100.0,
    "current": 4,
    "messages": [
        {"id": 1, "role": "user", "content": "Steam or diesel?", "created_at": 1.0},
        {"id": 2, "parent": 1, "role": "assistant", "content": "Steam.", "created_at": 2.0},
        {"id": 3, "parent": 1, "role": "assistant", "content": "Diesel.", "created_at": 3.0},
        {"id": 4, "parent": 3, "role": "user", "content": "Why diesel?", "created_at": 4.0},
    ],
}


def test_import_switch_export_search_through_the_client(daemon: DaemonProcess) -> None:
    async def scenario() -> None:
        async with DaemonClient(daemon.url, daemon.token) as client:
            chat = await client.import_chat(json.dumps(BRANCHED).encode())
            assert [m.content for m in chat.messages] == [
                "Steam or diesel?",
                "Diesel.",
                "Why diesel?",
            ]
            assert (chat.messages[1].branch, chat.messages[1].branches) == (2, 2)
            assert chat.preset == "Brief" and chat.title == "Trains"
            steam = chat.messages[1].sibling_ids[0]
            switched = await client.switch_chat_branch(chat.id, steam)
            assert [m.content for m in switched.messages] == ["Steam or diesel?", "Steam."]
            # A message added goes after the branch shown.
            await client.add_message(chat.id, NewMessage(role=Role.USER, content="More steam"))
            exported = await client.export_chat(chat.id)
            assert len(exported.messages) == 5 and exported.version == 1
            again = await client.import_chat(exported.model_dump_json().encode())
            assert [m.content for m in again.messages] == [
                "Steam or diesel?",
                "Steam.",
                "More steam",
            ]
            markdown = await client.export_chat_markdown(chat.id)
            assert markdown.startswith("# Trains") and "(version 1 of 2)" in markdown

            await client.create_chat(NewConversation(title="Diesel engines"))
            found = await client.search_chats("diesel")
            titles = [h for h in found.hits if h.message_id is None]
            messages = [h for h in found.hits if h.message_id is not None]
            assert [h.title for h in titles] == ["Diesel engines"]
            assert {h.snippet for h in messages} == {"Steam or diesel?", "Diesel.", "Why diesel?"}
            assert len((await client.search_chats("diesel", limit=2)).hits) == 2

            await client.save_chat_preset("Pirate voice", "Talk like a pirate.")
            await client.save_chat_preset("Brief", "Be brief.")
            listed = (await client.chat_presets()).presets
            assert [(p.name, p.text) for p in listed][1] == (
                "Pirate voice",
                "Talk like a pirate.",
            )
            await client.delete_chat_preset("Pirate voice")
            assert [p.name for p in (await client.chat_presets()).presets] == ["Brief"]
            try:
                await client.delete_chat_preset("Pirate voice")
            except ApiError as exc:
                assert exc.status == 404 and "No system-prompt preset" in str(exc)
            else:
                raise AssertionError("a missing preset was deleted")

    asyncio.run(scenario())


def test_refusals_over_http(daemon: DaemonProcess) -> None:
    with http(daemon) as client:
        wrong = problem(client.post("/chats/import", json={**BRANCHED, "version": 9}), 422)
        assert "version 9" in wrong.detail and "Update Roundhouse" in wrong.detail
        bad = problem(client.post("/chats/import", content=b"{nope"), 422)
        assert "not valid JSON" in bad.detail
        looped = {**BRANCHED, "messages": [{**BRANCHED["messages"][1], "parent": 2}]}  # type: ignore[index]
        assert (
            "does not come before" in problem(client.post("/chats/import", json=looped), 422).detail
        )
        assert client.get("/chats").json()["conversations"] == []
        problem(client.get("/chats/nope/export"), 404)
        problem(client.get("/chats/nope/export", params={"format": "pdf"}), 422)
        problem(client.post("/chats/nope/branch", json={"message_id": 1}), 404)
        problem(client.get("/chats/search"), 422)
        assert client.get("/chats/search", params={"q": "  "}).json()["hits"] == []
        problem(client.put("/chats/presets/%20", json={"text": "x"}), 422)
        slash = problem(client.put("/chats/presets/a%2Fb", json={"text": "x"}), 404)
        assert slash.status == 404
        chat = client.post("/chats/import", json=BRANCHED).json()
        problem(client.post(f"/chats/{chat['id']}/branch", json={"message_id": 99_999}), 404)
        markdown = client.get(f"/chats/{chat['id']}/export", params={"format": "md"})
        assert markdown.headers["content-type"].startswith("text/markdown")
        assert ChatExport.model_validate(client.get(f"/chats/{chat['id']}/export").json())


def test_an_import_over_the_cap_is_refused_before_it_is_read(daemon: DaemonProcess) -> None:
    with http(daemon) as client:
        huge = b"{" + b" " * (31 * 1024 * 1024) + b"}"
        answer = client.post("/chats/import", content=huge)
        assert answer.status_code in (413, 422)
        assert "at most 30 MiB" in answer.json()["detail"]
    assert isinstance(httpx, object)
