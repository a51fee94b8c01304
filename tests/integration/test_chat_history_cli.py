"""`roundhouse chats search|branch|export|import|presets` and `roundhouse chat --preset`
through the CLI against a real daemon and the real llama-server on the tiny GGUF."""

from __future__ import annotations

import json
from pathlib import Path

from tests.api.test_chat_history_api import BRANCHED
from tests.integration.test_chat_cli import Served, conversation, roundhouse, served

__all__ = ["served"]


def test_import_show_branch_export_search(served: Served, tmp_path: Path) -> None:
    source = tmp_path / "trains.json"
    source.write_text(json.dumps(BRANCHED), encoding="utf-8")
    imported = roundhouse(served, "chats", "import", str(source), "--json")
    assert imported.returncode == 0, imported.stderr
    chat = json.loads(imported.stdout)
    chat_id = chat["id"]
    steam = chat["messages"][1]["sibling_ids"][0]

    shown = roundhouse(served, "chats", "show", chat_id)
    assert "version 2/2" in shown.stdout and "Why diesel?" in shown.stdout
    assert f"roundhouse chats branch {chat_id} MESSAGE_ID" in " ".join(shown.stdout.split())

    switched = roundhouse(served, "chats", "branch", chat_id, str(steam))
    assert switched.returncode == 0, switched.stderr
    assert "Steam." in switched.stdout and "Why diesel?" not in switched.stdout
    assert [m["content"] for m in conversation(served, chat_id)["messages"]][-1] == "Steam."
    missing = roundhouse(served, "chats", "branch", chat_id, "99999")
    assert missing.returncode == 1 and "no message 99999" in missing.stderr

    out = tmp_path / "out.json"
    done = roundhouse(served, "chats", "export", chat_id, "--format", "json", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert len(json.loads(out.read_text(encoding="utf-8"))["messages"]) == 4
    again = roundhouse(served, "chats", "import", str(out), "--json")
    assert again.returncode == 0, again.stderr
    assert [m["content"] for m in json.loads(again.stdout)["messages"]] == [
        "Steam or diesel?",
        "Steam.",
    ]
    markdown = roundhouse(served, "chats", "export", chat_id)
    assert markdown.stdout.startswith("# Trains") and "version 1 of 2" in markdown.stdout

    found = roundhouse(served, "chats", "search", "diesel", "--json")
    assert found.returncode == 0, found.stderr
    assert {h["conversation_id"] for h in json.loads(found.stdout)["hits"]} >= {chat_id}
    table = roundhouse(served, "chats", "search", "diesel")
    assert "Why diesel?" in table.stdout
    nothing = roundhouse(served, "chats", "search", "zeppelin")
    assert "Nothing in the chat history matches" in nothing.stdout


def test_a_bad_import_is_refused_in_words(served: Served, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({**BRANCHED, "version": 7}), encoding="utf-8")
    refused = roundhouse(served, "chats", "import", str(wrong))
    assert refused.returncode == 1 and "version 7" in refused.stderr
    assert "Traceback" not in refused.stderr
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(31 * 1024 * 1024)
    refused = roundhouse(served, "chats", "import", str(huge))
    assert refused.returncode == 1 and "at most 30 MiB" in refused.stderr


def test_presets_and_a_chat_that_starts_with_one(served: Served) -> None:
    added = roundhouse(served, "chats", "presets", "add", "Terse", "Answer in one word.")
    assert added.returncode == 0 and "Saved the preset “Terse”" in added.stdout
    listed = roundhouse(served, "chats", "presets", "list")
    assert "Terse" in listed.stdout and "Answer in one word." in listed.stdout
    done = roundhouse(
        served,
        "chat",
        served.model,
        "--preset",
        "terse",
        "--prompt",
        "Hi",
        "--max-tokens",
        "4",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    saved = conversation(served, json.loads(done.stdout)["conversation_id"])
    assert (saved["preset"], saved["system_prompt"]) == ("Terse", "Answer in one word.")
    unknown = roundhouse(served, "chat", served.model, "--preset", "Nope", "--prompt", "Hi")
    assert unknown.returncode == 1 and "No system-prompt preset named “Nope”" in unknown.stderr
    assert "Terse" in unknown.stderr
    removed = roundhouse(served, "chats", "presets", "remove", "TERSE")
    assert removed.returncode == 0
    assert "No system-prompt presets yet" in roundhouse(served, "chats", "presets", "list").stdout
    gone = roundhouse(served, "chats", "presets", "remove", "Terse")
    assert gone.returncode == 1 and "No system-prompt preset" in gone.stderr
