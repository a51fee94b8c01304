"""The chat history in SQLite: WAL, bounds, reopening, delete-from, edits, titles, a damaged
file in words, and migrations."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

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
from roundhouse.core.chat.database import connect
from roundhouse.core.chat.schema import MIGRATIONS
from roundhouse.core.chat.store import ChatHistoryError, ChatStore
from roundhouse.core.chat.titles import DEFAULT_TITLE, title_from
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.infra.sqlite import migrate, schema_version

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def user(text: str) -> NewMessage:
    return NewMessage(role=Role.USER, content=text)


def assistant(text: str, **stats: Any) -> NewMessage:
    return NewMessage(role=Role.ASSISTANT, content=text, stats=ReplyStats(**stats))


class Ticks:
    """A clock that moves one second per reading: every change has its own time."""

    def __init__(self) -> None:
        self._count = itertools.count(1_800_000_000)

    def __call__(self) -> float:
        return float(next(self._count))


def make_store(path: Path, max_conversations: int = 1000) -> ChatStore:
    return ChatStore(path / "chat.sqlite3", lambda: max_conversations, clock=Ticks())


def test_the_file_is_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation(messages=[user("hi"), assistant("hello")])))
    run(store.delete(chat.id))
    run(store.close())
    raw = sqlite3.connect(tmp_path / "chat.sqlite3")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # The messages went with their conversation (ON DELETE CASCADE, foreign keys on).
    assert raw.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    raw.close()


def test_conversations_survive_a_reopen(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    params = SamplingParams(temperature=0.2, max_tokens=64)
    new = NewConversation(model="m", system_prompt="Be brief.", params=params)
    chat = run(store.create(new))
    run(store.add_message(chat.id, user("What is 2+2?")))
    stats: dict[str, Any] = {"ttft_ms": 12.5, "completion_tokens": 3, "engine": "llama.cpp"}
    run(store.add_message(chat.id, assistant("4", **stats)))
    run(store.close())

    again = run(make_store(tmp_path).conversation(chat.id))
    assert again.system_prompt == "Be brief." and again.params == params and again.model == "m"
    assert [(m.role, m.content) for m in again.messages] == [
        (Role.USER, "What is 2+2?"),
        (Role.ASSISTANT, "4"),
    ]
    assert again.messages[1].stats == ReplyStats(**stats)
    assert again.message_count == 2


def test_the_newest_come_first_and_the_oldest_go_beyond_the_bound(tmp_path: Path) -> None:
    store = make_store(tmp_path, max_conversations=3)
    ids = [run(store.create(NewConversation(title=f"c{i}"))).id for i in range(3)]
    # Touching the oldest makes it the most recent: the next one pushes out c1 instead.
    run(store.add_message(ids[0], user("still here")))
    newest = run(store.create(NewConversation(title="c3"))).id
    listed = [c.id for c in run(store.summaries())]
    assert listed == [newest, ids[0], ids[2]]
    with pytest.raises(NotFoundError, match=ids[1]):
        run(store.conversation(ids[1]))
    assert [c.id for c in run(store.summaries(limit=2))] == [newest, ids[0]]


def test_delete_from_a_message_takes_it_and_every_later_one(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation(messages=[user("a"), assistant("b")])))
    third = run(store.add_message(chat.id, user("c")))
    run(store.add_message(chat.id, assistant("d")))
    other = run(store.create(NewConversation(messages=[user("x")])))

    run(store.delete_messages_from(chat.id, third.id))
    assert [m.content for m in run(store.conversation(chat.id)).messages] == ["a", "b"]
    # A message of another conversation is not found here, and nothing is deleted.
    with pytest.raises(NotFoundError):
        run(store.delete_messages_from(chat.id, other.messages[0].id))
    with pytest.raises(NotFoundError):
        run(store.delete_messages_from("nope", third.id))
    assert run(store.conversation(other.id)).message_count == 1


def test_edit_changes_the_content_and_an_automatic_title(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))
    assert chat.title == DEFAULT_TITLE
    first = run(store.add_message(chat.id, user("Tell me about trains\nin detail")))
    assert run(store.conversation(chat.id)).title == "Tell me about trains"

    edited = run(store.edit_message(chat.id, first.id, MessageEdit(content="Locomotives?")))
    assert edited.content == "Locomotives?" and edited.id == first.id
    assert edited.role == Role.USER
    assert run(store.conversation(chat.id)).title == "Locomotives?"

    renamed = run(store.update(chat.id, ConversationUpdate(title="Rail")))
    run(store.edit_message(chat.id, first.id, MessageEdit(content="Steam?")))
    assert run(store.conversation(chat.id)).title == renamed.title == "Rail"
    # An explicit null returns to the automatic title.
    back = run(store.update(chat.id, ConversationUpdate(title=None)))
    assert back.title == "Steam?"
    run(store.update(chat.id, ConversationUpdate(title="Mine")))
    assert run(store.update(chat.id, ConversationUpdate(title="   "))).title == "Steam?"
    with pytest.raises(NotFoundError):
        run(store.edit_message(chat.id, first.id + 99, MessageEdit(content="x")))


def test_update_changes_only_the_fields_given(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    params = SamplingParams(top_p=0.9)
    chat = run(store.create(NewConversation(model="a", system_prompt="S", params=params)))
    changed = run(store.update(chat.id, ConversationUpdate(model="b")))
    assert (changed.model, changed.system_prompt, changed.params) == ("b", "S", params)
    assert changed.updated_at > chat.updated_at
    changed = run(store.update(chat.id, ConversationUpdate(params=SamplingParams())))
    assert changed.params == SamplingParams() and changed.model == "b"
    with pytest.raises(NotFoundError):
        run(store.update("nope", ConversationUpdate(model="c")))


def test_titles_are_given_or_taken_from_the_first_user_message(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    given = run(store.create(NewConversation(title="  Mine ", messages=[user("other")])))
    assert given.title == "Mine"
    long_line = "word " * 30
    taken = run(store.create(NewConversation(messages=[assistant("hi"), user(long_line)])))
    assert taken.title.endswith("…") and len(taken.title) <= 60
    assert taken.title.startswith("word word")
    assert title_from("\n\n   spaced    out  \nsecond") == "spaced out"
    assert title_from("x" * 100) == "x" * 59 + "…"
    assert title_from("   ") == title_from(None) == DEFAULT_TITLE


def test_a_message_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))
    # The schema refuses it already; the store checks too, for callers that skip validation.
    huge = NewMessage.model_construct(role=Role.USER, content="x" * (MAX_MESSAGE_CHARS + 1))
    with pytest.raises(InvalidInputError, match="at most"):
        run(store.add_message(chat.id, huge))
    assert run(store.conversation(chat.id)).messages == []


def test_a_damaged_file_fails_in_words_then_a_fresh_one_works(tmp_path: Path) -> None:
    path = tmp_path / "chat.sqlite3"
    path.write_bytes(b"this is not a database, " * 200)
    store = ChatStore(path, lambda: 100)
    with pytest.raises(ChatHistoryError) as caught:
        run(store.summaries())
    assert caught.value.status == 500
    assert str(path) in caught.value.detail
    assert "Move it away" in caught.value.detail
    # The user moves it away: the same store (the daemon did not restart) starts afresh.
    path.rename(tmp_path / "chat.sqlite3.damaged")
    assert run(store.summaries()) == []
    assert run(store.create(NewConversation())).title == DEFAULT_TITLE


def test_concurrent_writes_are_serialised(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))

    async def write_many() -> None:
        await asyncio.gather(*(store.add_message(chat.id, user(str(i))) for i in range(40)))

    run(write_many())
    messages = run(store.conversation(chat.id)).messages
    assert sorted(int(m.content) for m in messages) == list(range(40))
    assert len({m.id for m in messages}) == 40


def test_a_file_from_a_newer_roundhouse_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "chat.sqlite3"
    first = ChatStore(path, lambda: 100)
    run(first.create(NewConversation(title="kept")))
    run(first.close())
    raw = sqlite3.connect(path)
    raw.execute("UPDATE schema_version SET version = ?", (len(MIGRATIONS) + 5,))
    raw.commit()
    with pytest.raises(ChatHistoryError, match="newer Roundhouse"):
        run(ChatStore(path, lambda: 100).summaries())
    assert raw.execute("SELECT version FROM schema_version").fetchone() == (len(MIGRATIONS) + 5,)
    assert raw.execute("SELECT title FROM conversations").fetchall() == [("kept",)]
    raw.close()


def _add_pinned(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")


def _broken(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE conversations ADD COLUMN half INTEGER")
    db.execute("this is not SQL")


def test_migrations_upgrade_a_file_and_keep_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "chat.sqlite3"
    store = ChatStore(path, lambda: 100)
    chat = run(store.create(NewConversation(messages=[user("kept")])))
    run(store.close())

    db = connect(path)
    assert schema_version(db) == len(MIGRATIONS)
    # A failing step rolls back whole: the version and the tables stay as they were.
    with pytest.raises(sqlite3.OperationalError):
        migrate(db, (*MIGRATIONS, _broken))
    assert schema_version(db) == len(MIGRATIONS)
    columns = {row[1] for row in db.execute("PRAGMA table_info(conversations)")}
    assert "half" not in columns

    assert migrate(db, (*MIGRATIONS, _add_pinned)) == len(MIGRATIONS) + 1
    assert schema_version(db) == len(MIGRATIONS) + 1
    assert db.execute("SELECT pinned FROM conversations WHERE id = ?", (chat.id,)).fetchone()
    assert db.execute("SELECT content FROM messages").fetchall() == [("kept",)]
    db.close()


def test_an_empty_file_is_created_at_the_newest_version(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "fresh.sqlite3", isolation_level=None)
    assert schema_version(db) == 0
    assert migrate(db, MIGRATIONS) == len(MIGRATIONS) == schema_version(db)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"conversations", "messages", "schema_version"} <= tables
    db.close()


PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEA"
    "wS2OUAAAAABJRU5ErkJggg=="
)


def test_images_of_a_message_survive_a_reopen(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    chat = run(store.create(NewConversation()))
    run(store.add_message(chat.id, NewMessage(role=Role.USER, content="what?", images=(PIXEL,))))
    run(store.add_message(chat.id, assistant("a dot")))
    run(store.close())
    again = run(make_store(tmp_path).conversation(chat.id))
    assert [m.images for m in again.messages] == [(PIXEL,), ()]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://example.com/cat.png", "data: URL"),
        ("data:text/html;base64,PGI+", "PNG, JPEG, WebP or GIF"),
        ("data:image/png;base64," + "A" * 12_000_000, "at most"),
    ],
)
def test_an_image_that_is_not_a_small_data_url_is_refused(url: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        NewMessage(role=Role.USER, content="x", images=(url,))
