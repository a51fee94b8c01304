"""`roundhouse compare` through a real daemon and two real llama-server instances of the tiny
GGUF (served under two names): both replies with their engine, TTFT and tok/s, nothing kept
in the history, a model the gateway does not serve failing in words beside the other reply."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess, path_with
from tests.support import cli
from tests.support.serving import llama_cpp, serving


@dataclass
class Served:
    daemon: DaemonProcess
    root: Path
    models: list[str]


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("compare") / "home"
    # One engine thread each: two engines on a 2-core machine would otherwise starve.
    requests = [
        llama_cpp(tiny_gguf, ctx_size=512, parallel=1, threads=1, served_name=name)
        for name in ("tiny-left", "tiny-right")
    ]
    with serving(root, *requests, env=path_with(llama_server_binary)) as (daemon, infos):
        yield Served(daemon, root, [info.models[0] for info in infos])


def roundhouse(
    served: Served, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return cli.roundhouse(
        served.root,
        *args,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        no_color=True,
        timeout=90,
    )


def test_two_instances_answer_the_same_prompt_with_their_figures(served: Served) -> None:
    left, right = served.models
    assert (left, right) == ("tiny-left", "tiny-right")
    done = roundhouse(served, "compare", left, right, "Tell me a story", "--max-tokens", "8")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index(left) < out.index(right), "each reply under its model, in order"
    summary = out.splitlines()[-2:]
    for line, model in zip(summary, (left, right), strict=True):
        assert line.startswith(f"{model}: llama.cpp, TTFT ") and line.endswith(" tok/s"), line
    shown = roundhouse(served, "compare", left, right, "--max-tokens", "8", "--json", stdin="Hi")
    assert shown.returncode == 0, shown.stderr
    answer = json.loads(shown.stdout)
    assert answer["prompt"] == "Hi"
    assert [r["model"] for r in answer["replies"]] == [left, right]
    for reply in answer["replies"]:
        stats = reply["stats"]
        assert reply["error"] is None and reply["content"]
        assert stats["engine"] == "llama.cpp" and stats["completion_tokens"] == 8
        assert stats["ttft_ms"] > 0 and stats["tokens_per_s"] > 0
        assert stats["model"] == reply["model"]
    listed = roundhouse(served, "chats", "list", "--json")
    assert json.loads(listed.stdout)["conversations"] == [], "a compare keeps nothing"


def test_a_model_not_served_fails_in_words_beside_the_other_reply(served: Served) -> None:
    left = served.models[0]
    done = roundhouse(served, "compare", left, "no-such-model", "Hello", "--max-tokens", "4")
    assert done.returncode == 1
    assert "Failed:" in done.stdout and "no-such-model" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert f"{left}: llama.cpp, TTFT" in done.stdout, "the served one still answered"
    same = roundhouse(served, "compare", left, left, "Hello")
    assert same.returncode == 1 and "two different models" in same.stderr
    empty = roundhouse(served, "compare", left, served.models[1], "  ")
    assert empty.returncode == 1 and "Nothing to send" in empty.stderr


def test_save_keeps_each_exchange_as_a_conversation_named_with_its_model(
    served: Served,
) -> None:
    left, right = served.models
    done = roundhouse(
        served, "compare", left, right, "Name a colour", "--max-tokens", "6", "--save", "--json"
    )
    assert done.returncode == 0, done.stderr
    replies = json.loads(done.stdout)["replies"]
    ids = [reply["conversation_id"] for reply in replies]
    assert all(ids) and len(set(ids)) == 2
    for reply, conversation_id in zip(replies, ids, strict=True):
        shown = roundhouse(served, "chats", "show", conversation_id, "--json")
        kept = json.loads(shown.stdout)
        assert kept["model"] == reply["model"]
        assert kept["title"] == f"Name a colour ({reply['model']})"
        question, answer = kept["messages"][:2]
        assert question["role"] == "user" and question["content"] == "Name a colour"
        assert answer["content"] == reply["content"]
        assert answer["stats"]["engine"] == "llama.cpp" and answer["stats"]["ttft_ms"] > 0
    for conversation_id in ids:
        assert roundhouse(served, "chats", "rm", conversation_id).returncode == 0
