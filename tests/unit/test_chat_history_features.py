"""The chat history's branches, search, export and import, and system-prompt presets, on a
real SQLite file; and a file written before branches (schema v2) brought up to date."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from roundhouse.api.chat import (
    MAX_IMPORT_BYTES,
    ConversationUpdate,
    NewConversation,
    NewMessage,
    Preset,
    ReplyStats,
    Role,
)
from roundhouse.core.chat.database import connect
from roundhouse.core.chat.schema import MIGRATIONS
from roundhouse.core.chat.search import fts_query
from roundhouse.core.chat.store import ChatStore
from roundhouse.core.chat.transfer import parse_export, to_markdown
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.infra.sqlite import migrate, schema_version
from tests.unit.test_chat_store import assistant, make_store, run, user


def _chat_with_branches(store: ChatStore) -> tuple[str, list[int]]:
    """You: q1 · A: a1 · You: q2 · A: a2, then q2 edited to q2b (answered b2), then b2
    regenerated to b2-again: ids q1, a1, q2, a2, q2b, b2, b2r."""
    chat = run(store.create(NewConversation(model="m")))
    ids = [run(store.add_message(chat.id, m)).id for m in (user("q1"), assistant("a1"))]
    ids += [run(store.add_message(chat.id, m)).id for m in (user("q2"), assistant("a2"))]
    run(store.rewind(chat.id, ids[2]))
    ids += [run(store.add_message(chat.id, m)).id for m in (user("q2b"), assistant("b2"))]
    run(store.rewind(chat.id, ids[5]))
    ids.append(run(store.add_message(chat.id, assistant("b2 again"))).id)
    return chat.id, ids


def test_an_edit_and_a_regenerate_keep_the_old_branch(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat_id, (_q1, a1, q2, _a2, q2b, b2, b2r) = _chat_with_branches(store)
    shown = run(store.conversation(chat_id))
    assert [m.content for m in shown.messages] == ["q1", "a1", "q2b", "b2 again"]
    assert [(m.branch, m.branches) for m in shown.messages] == [(1, 1), (1, 1), (2, 2), (2, 2)]
    assert shown.messages[2].sibling_ids == (q2, q2b)
    assert shown.messages[3].sibling_ids == (b2, b2r)
    assert shown.messages[2].parent_id == a1
    # Every message is still there.
    assert shown.message_count == 7


def test_switching_follows_the_newest_descendant(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat_id, (_q1, _a1, q2, _a2, q2b, b2, _b2r) = _chat_with_branches(store)
    back = run(store.switch_branch(chat_id, q2))
    assert [m.content for m in back.messages] == ["q1", "a1", "q2", "a2"]
    assert back.messages[2].branch == 1
    forth = run(store.switch_branch(chat_id, q2b))
    assert [m.content for m in forth.messages] == ["q1", "a1", "q2b", "b2 again"]
    older = run(store.switch_branch(chat_id, b2))
    assert [m.content for m in older.messages][-1] == "b2"
    # A new message goes after the path shown, and the choice survives a reopen.
    run(store.add_message(chat_id, user("more")))
    run(store.close())
    again = run(make_store(tmp_path).conversation(chat_id))
    assert [m.content for m in again.messages] == ["q1", "a1", "q2b", "b2", "more"]
    with pytest.raises(NotFoundError, match="no message 9999"):
        run(make_store(tmp_path).switch_branch(chat_id, 9999))


def test_deleting_a_message_takes_its_branch_and_shows_another(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat_id, (q1, _a1, _q2, _a2, q2b, _b2, _b2r) = _chat_with_branches(store)
    run(store.delete_messages_from(chat_id, q2b))
    shown = run(store.conversation(chat_id))
    assert [m.content for m in shown.messages] == ["q1", "a1", "q2", "a2"]
    assert shown.message_count == 4 and shown.messages[2].branches == 1
    run(store.delete_messages_from(chat_id, q1))
    assert run(store.conversation(chat_id)).messages == []
    # The text index lost the deleted messages too (cascaded deletes run its triggers).
    run(store.close())
    db = connect(tmp_path / "chat.sqlite3")
    db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
    assert db.execute(
        "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'q2b'"
    ).fetchone() == (0,)
    db.close()


def test_the_automatic_title_follows_the_first_message_shown(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))
    first = run(store.add_message(chat.id, user("Steam engines")))
    run(store.add_message(chat.id, assistant("Yes.")))
    run(store.rewind(chat.id, first.id))
    run(store.add_message(chat.id, user("Diesel engines")))
    assert run(store.conversation(chat.id)).title == "Diesel engines"
    assert run(store.switch_branch(chat.id, first.id)).title == "Steam engines"
    titled = run(store.update(chat.id, ConversationUpdate(title="Mine")))
    assert run(store.switch_branch(chat.id, titled.messages[0].sibling_ids[1])).title == "Mine"


def test_a_v2_file_gets_its_messages_chained(tmp_path: Path) -> None:
    path = tmp_path / "chat.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:2])
    for chat in ("one", "two"):
        db.execute(
            "INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, ?, 1, 1)",
            (chat, chat),
        )
    for n, chat in enumerate(["one", "two", "one", "two", "one"]):
        role = "user" if n < 2 or n == 4 else "assistant"
        db.execute(
            "INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, ?, ?, 1)",
            (chat, role, f"{chat} {n}"),
        )
    db.close()
    db = connect(path)
    assert schema_version(db) == len(MIGRATIONS) == 3
    parents = db.execute("SELECT id, parent_id FROM messages ORDER BY id").fetchall()
    assert parents == [(1, None), (2, None), (3, 1), (4, 2), (5, 3)]
    assert db.execute("SELECT id, leaf_id FROM conversations ORDER BY id").fetchall() == [
        ("one", 5),
        ("two", 4),
    ]
    db.close()
    store = ChatStore(path, lambda: 100)
    one = run(store.conversation("one"))
    assert [m.content for m in one.messages] == ["one 0", "one 2", "one 4"]
    # The old text is searchable too: the index was built from the rows already there.
    assert [h.message_id for h in run(store.search("two")).hits if h.message_id] == [2, 4]


def test_search_finds_titles_and_text_with_snippets_bounded(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    first = run(store.create(NewConversation(title="Rust lifetimes")))
    run(store.add_message(first.id, user("why does the borrow checker complain here")))
    second = run(store.create(NewConversation(title="Cooking")))
    long = "word " * 200 + "the special saffron risotto " + "word " * 200
    run(store.add_message(second.id, assistant(long)))
    hits = run(store.search("rust")).hits
    assert [(h.conversation_id, h.message_id) for h in hits] == [(first.id, None)]
    found = run(store.search("saffron ris")).hits
    assert [(h.conversation_id, h.role) for h in found] == [(second.id, Role.ASSISTANT)]
    assert "saffron" in found[0].snippet and len(found[0].snippet) < 200
    assert run(store.search("BORROW")).hits[0].conversation_id == first.id
    # Operators and quotes are words, not syntax.
    assert run(store.search('"AND OR NOT* (')).hits == []
    for n in range(5):
        chat = run(store.create(NewConversation(title=f"many {n}")))
        run(store.add_message(chat.id, user("many")))
    bounded = run(store.search("many", limit=3))
    assert len(bounded.hits) == 3 and bounded.truncated
    assert fts_query('a "b') == '"a" """b"*'


def test_search_without_fts5_uses_like(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))
    run(store.add_message(chat.id, user("100% of the_cake")))
    run(store.close())
    db = connect(tmp_path / "chat.sqlite3")
    db.execute("DROP TABLE messages_fts")
    for trigger in ("insert", "delete", "update"):
        db.execute(f"DROP TRIGGER messages_fts_{trigger}")
    db.close()
    store = make_store(tmp_path)
    # The title (taken from the message) and the message.
    hits = run(store.search("0% of the_c")).hits
    assert [(h.message_id is None, h.snippet) for h in hits] == [
        (True, "100% of the_cake"),
        (False, "100% of the_cake"),
    ]
    assert run(store.search("10%x")).hits == []


def test_export_then_import_gives_the_same_conversation_with_every_branch(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path)
    chat_id, ids = _chat_with_branches(store)
    run(store.update(chat_id, ConversationUpdate(system_prompt="Be brief.", preset="Brief")))
    run(store.switch_branch(chat_id, ids[2]))
    exported = run(store.export(chat_id))
    assert exported.version == 1 and len(exported.messages) == 7
    raw = exported.model_dump_json().encode()
    imported = run(store.import_export(parse_export(raw)))
    original = run(store.conversation(chat_id))
    assert imported.id != chat_id
    assert imported.title == original.title and imported.preset == "Brief"
    assert imported.system_prompt == "Be brief."

    def shape(chat_id: str) -> list[tuple[str, int, int]]:
        chat = run(store.conversation(chat_id))
        return [(m.content, m.branch, m.branches) for m in chat.messages]

    assert shape(imported.id) == shape(chat_id)
    again = run(store.export(imported.id))
    assert [(m.role, m.content) for m in again.messages] == [
        (m.role, m.content) for m in exported.messages
    ]
    switched = run(store.switch_branch(imported.id, imported.messages[2].sibling_ids[1]))
    assert [m.content for m in switched.messages] == ["q1", "a1", "q2b", "b2 again"]
    markdown = to_markdown(original)
    assert "## You (version 1 of 2)" in markdown and "q2" in markdown
    assert "Be brief." in markdown


def _export(**changes: object) -> bytes:
    data: dict[str, object] = {
        "format": "roundhouse-chat",
        "version": 1,
        "title": "t",
        "created_at": 1.0,
        "updated_at": 1.0,
        "messages": [{"id": 1, "role": "user", "content": "hi", "created_at": 1.0}],
    }
    data.update(changes)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "not a Roundhouse chat export"),
        (_export(version=2), "version 2; this Roundhouse reads version 1"),
        (_export(messages=[{"id": 1, "role": "robot", "content": "x", "created_at": 1}]), "role"),
        (
            _export(
                messages=[{"id": 1, "parent": 7, "role": "user", "content": "x", "created_at": 1}]
            ),
            "does not come before it",
        ),
        (_export(current=5), "current message 5"),
        (b" " * (MAX_IMPORT_BYTES + 1), "at most 30 MiB"),
    ],
)
def test_a_bad_import_is_refused_in_words(raw: bytes, words: str) -> None:
    with pytest.raises(InvalidInputError, match=words):
        parse_export(raw)


def test_a_failed_import_leaves_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    good = parse_export(_export())
    bad = good.model_copy(
        update={
            "messages": [
                *good.messages,
                good.messages[0].model_copy(update={"id": 2, "content": "x" * 2_000_001}),
            ]
        }
    )
    with pytest.raises(InvalidInputError, match="at most"):
        run(store.import_export(bad))
    assert run(store.summaries()) == []
    assert run(store.import_export(good)).messages[0].content == "hi"


def test_presets_are_saved_named_and_chosen_per_conversation(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    run(store.save_preset(Preset(name="  Pirate   voice ", text="Talk like a pirate.")))
    run(store.save_preset(Preset(name="Brief", text="Be brief.")))
    assert [p.name for p in run(store.presets())] == ["Brief", "Pirate voice"]
    run(store.save_preset(Preset(name="brief", text="Be very brief.")))
    assert run(store.preset("BRIEF")).text == "Be very brief."
    chat = run(store.create(NewConversation(system_prompt="Be very brief.", preset="Brief")))
    assert (chat.preset, chat.system_prompt) == ("Brief", "Be very brief.")
    run(store.delete_preset("brief"))
    with pytest.raises(NotFoundError, match="No system-prompt preset"):
        run(store.delete_preset("Brief"))
    # The conversation keeps the text it uses.
    kept = run(store.conversation(chat.id))
    assert (kept.preset, kept.system_prompt) == ("Brief", "Be very brief.")
    changed = run(store.update(chat.id, ConversationUpdate(system_prompt="", preset=None)))
    assert changed.preset is None
    with pytest.raises(ValueError, match="blank"):
        Preset(name="   ", text="x")


def test_a_reply_answers_the_path_shown_only(tmp_path: Path) -> None:
    """What a turn sends the engine is the current path: the other branch stays out."""
    from roundhouse.core.chat.turns import history_messages

    store = make_store(tmp_path)
    chat_id, _ = _chat_with_branches(store)
    shown = run(store.conversation(chat_id))
    sent = history_messages("", shown.messages)
    assert [m["content"] for m in sent] == ["q1", "a1", "q2b", "b2 again"]
    assert isinstance(shown.messages[0].stats, ReplyStats | None)
    assert NewMessage(role=Role.USER, content="x").images == ()
