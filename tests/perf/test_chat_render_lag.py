"""The chat pane under a fast stream: event-loop lag while a reply renders at 3,000 tokens/s.

A synthetic reply (prose, lists, fenced code) goes through the same path a real one takes
(Follow.received -> the draft -> the transcript's coalescing timer -> the streaming message),
on qasync's loop, behind a transcript that already holds a long conversation. A 5 ms timer
measures how late the loop serves it: the UI's responsiveness while the reply streams.
The second does the same with a reply that is mostly code, coloured by Pygments as it comes.
The third does the same with real replies: the Chat page, a real daemon and
llama-server on the tiny model, as fast as it streams on this machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from roundhouse.api.chat import Message, ReplyStats, Role
from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.client.chat_stream import ChatDelta
from roundhouse.gui.app import Ui, build_ui
from roundhouse.gui.call import Follow
from roundhouse.gui.chat_reply import ReplyDraft
from roundhouse.gui.code_highlight import run_pending
from roundhouse.gui.daemon_bridge import ConnectionState
from roundhouse.gui.event_loop import GuiEventLoop, install_asyncgen_hooks
from roundhouse.gui.pages.chat_page import ChatPage
from roundhouse.gui.widgets.chat_transcript import Transcript
from tests.daemon_process import DaemonProcess, path_with, running_daemon, start_ready

TOKENS_PER_S = 3000
STREAM_S = 5.0
TICK_MS = 5
HISTORY_MESSAGES = 60
P99_BUDGET_MS = 30.0

PROSE = (
    "The roundhouse keeps each engine ready: it **measures** the GPU, picks a `ctx_size` that "
    "fits, and turns traffic toward the instance that should serve it. "
)
CODE = '''```python
def serve(model: str, port: int) -> list[str]:
    """Build the argv; running it is a separate step."""
    return ["llama-server", "-m", model, "--port", str(port), "-c", "4096"]
```
'''
LIST = "1. Start the engine\n2. Wait for `/health`\n3. Route by model name\n\n"


def reply_markdown(chars: int) -> str:
    """A long reply mixing paragraphs, lists and fenced code, as models write them."""
    parts: list[str] = []
    total = 0
    index = 0
    while total < chars:
        piece = (PROSE * 3 + "\n\n", LIST, CODE + "\n", "## Section\n\n")[index % 4]
        parts.append(piece)
        total += len(piece)
        index += 1
    return "".join(parts)


def tokens_of(text: str) -> list[str]:
    """~4 characters a token, split where a tokenizer would (words keep their space)."""
    out: list[str] = []
    word = ""
    for char in text:
        word += char
        if char in " \n" or len(word) >= 4:
            out.append(word)
            word = ""
    if word:
        out.append(word)
    return out


def history(count: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(count):
        role = Role.USER if i % 2 == 0 else Role.ASSISTANT
        content = (
            f"Question {i}: how do I start an engine?"
            if role == Role.USER
            else (reply_markdown(1200))
        )
        stats = ReplyStats(engine="llama.cpp", ttft_ms=80, completion_tokens=300) if i % 2 else None
        messages.append(Message(id=i + 1, role=role, content=content, stats=stats, created_at=0))
    return messages


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


@pytest.fixture
def loop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    qapp.setQuitOnLastWindowClosed(False)
    event_loop = GuiEventLoop(qapp)
    asyncio.set_event_loop(event_loop)
    restore = install_asyncgen_hooks(event_loop)
    try:
        yield event_loop
    finally:
        restore()
        asyncio.set_event_loop(None)
        event_loop.close()


async def stream_synthetic(transcript: Transcript, tokens: list[str]) -> dict[str, Any]:
    """Stream `tokens` at TOKENS_PER_S through a Follow while a 5 ms timer measures lag."""
    draft = ReplyDraft("synthetic")
    transcript.stream(draft)
    follow = Follow("a synthetic reply")

    def on_received(item: ChatDelta) -> None:
        draft.add(item.content, item.reasoning)
        transcript.changed()

    follow.received.connect(on_received)
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    renders_before = transcript.renders
    sent = 0
    started = time.perf_counter()
    timer.start(TICK_MS)
    while sent < len(tokens):
        await asyncio.sleep(0.002)
        due = min(len(tokens), int((time.perf_counter() - started) * TOKENS_PER_S))
        while sent < due:
            follow.receive(ChatDelta(content=tokens[sent]))
            sent += 1
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.2)
    timer.stop()
    transcript.end_stream()
    lags = [max(0.0, (b - a) * 1000 - TICK_MS) for a, b in itertools.pairwise(ticks)]
    return {
        "tokens": sent,
        "tokens_per_s": sent / elapsed,
        "renders_per_s": (transcript.renders - renders_before) / elapsed,
        "lag_p50_ms": statistics.median(lags),
        "lag_p99_ms": percentile(lags, 99),
        "lag_max_ms": max(lags),
        "ticks": len(ticks),
        "shown": transcript.messages[-1].body.markdown,
        "text": draft.content,
    }


@pytest.mark.perf
def test_render_lag_at_3000_tokens_per_second(
    qapp: QApplication, loop: qasync.QEventLoop, report: Any
) -> None:
    transcript = Transcript()
    transcript.resize(1000, 720)
    transcript.show()
    transcript.set_messages(history(HISTORY_MESSAGES))
    tokens = tokens_of(reply_markdown(int(TOKENS_PER_S * STREAM_S * 4)))[
        : int(TOKENS_PER_S * STREAM_S)
    ]
    result = loop.run_until_complete(stream_synthetic(transcript, tokens))
    assert result["shown"] == result["text"], "the whole reply reached the screen"
    report.add("tokens_streamed", result["tokens"])
    report.add("tokens_per_s", round(result["tokens_per_s"]))
    report.add("transcript_messages_before", HISTORY_MESSAGES)
    report.add("repaints_of_the_reply_per_s", round(result["renders_per_s"], 1))
    report.add("event_loop_lag_p50_ms", round(result["lag_p50_ms"], 2))
    report.add("event_loop_lag_p99_ms", round(result["lag_p99_ms"], 2))
    report.add("event_loop_lag_max_ms", round(result["lag_max_ms"], 2))
    report.add("budget", f"lag p99 <= {P99_BUDGET_MS:.0f} ms at {TOKENS_PER_S} tokens/s")
    transcript.deleteLater()
    assert result["tokens_per_s"] >= TOKENS_PER_S * 0.9
    assert result["renders_per_s"] <= 21
    assert result["lag_p99_ms"] <= P99_BUDGET_MS


CODE_BLOCKS = (
    (
        "python",
        '''import asyncio
from dataclasses import dataclass


@dataclass(frozen=True)
class Instance:
    """One engine process and the port it serves on."""

    model: str
    port: int
    ctx_size: int = 4096

    def argv(self) -> list[str]:
        # The argv is built here; starting it is the supervisor's job.
        return ["llama-server", "-m", self.model, "--port", str(self.port)]


async def wait_ready(instance: Instance, within_s: float = 30.0) -> bool:
    for attempt in range(int(within_s * 10)):
        if await probe(instance.port):
            return True
        await asyncio.sleep(0.1)
    return False
''',
    ),
    (
        "javascript",
        """const models = await fetch("/v1/models").then((r) => r.json());
for (const model of models.data) {
  console.log(`${model.id}: ${model.owned_by ?? "local"}`);
}
export function pick(list, wanted) {
  return list.find((m) => m.id === wanted) || list[0];
}
""",
    ),
    (
        "bash",
        """#!/usr/bin/env bash
set -euo pipefail
for port in 8080 8081; do
  curl -s "http://127.0.0.1:${port}/health" || echo "port $port is down" >&2
done
""",
    ),
    (
        "rust",
        """fn main() {
    let ports: Vec<u16> = (8080..8084).collect();
    for port in &ports {
        println!("listening on {}", port);
    }
}
""",
    ),
)


def code_heavy_markdown(chars: int) -> str:
    """A reply that is mostly fenced code in several languages, a sentence between blocks."""
    parts: list[str] = []
    total = 0
    index = 0
    while total < chars:
        language, body = CODE_BLOCKS[index % len(CODE_BLOCKS)]
        piece = f"Step {index}: the `{language}` part.\n\n```{language}\n{body}```\n\n"
        parts.append(piece)
        total += len(piece)
        index += 1
    return "".join(parts)


@pytest.mark.perf
def test_render_lag_with_highlighted_code_at_3000_tokens_per_second(
    qapp: QApplication, loop: qasync.QEventLoop, report: Any
) -> None:
    """A reply full of code streams in with highlighting on, behind a long conversation."""
    transcript = Transcript()
    transcript.resize(1000, 720)
    transcript.show()
    transcript.set_messages(history(HISTORY_MESSAGES))
    tokens = tokens_of(code_heavy_markdown(int(TOKENS_PER_S * STREAM_S * 4)))[
        : int(TOKENS_PER_S * STREAM_S)
    ]
    result = loop.run_until_complete(stream_synthetic(transcript, tokens))
    assert result["shown"] == result["text"], "the whole reply reached the screen"
    blocks = transcript.messages[-1].body.code_blocks()
    run_pending()  # what was still queued when the stream ended
    coloured = [b for b in blocks if b.highlighter.formats]
    report.add("tokens_streamed", result["tokens"])
    report.add("tokens_per_s", round(result["tokens_per_s"]))
    report.add("code_blocks", len(blocks))
    report.add("code_blocks_coloured", len(coloured))
    report.add("repaints_of_the_reply_per_s", round(result["renders_per_s"], 1))
    report.add("event_loop_lag_p50_ms", round(result["lag_p50_ms"], 2))
    report.add("event_loop_lag_p99_ms", round(result["lag_p99_ms"], 2))
    report.add("event_loop_lag_max_ms", round(result["lag_max_ms"], 2))
    report.add("budget", f"lag p99 <= {P99_BUDGET_MS:.0f} ms at {TOKENS_PER_S} tokens/s")
    transcript.deleteLater()
    assert len(blocks) >= 50
    # Every block but the last, which the stream may have cut before a whole line came.
    assert len(coloured) >= len(blocks) - 1, "highlighting was on"
    assert result["tokens_per_s"] >= TOKENS_PER_S * 0.9
    assert result["lag_p99_ms"] <= P99_BUDGET_MS


REAL_REPLIES = 4
# One engine thread: on a 2-core machine llama-server's default (a thread per core, which
# spin between tokens) takes the CPU from the app for up to a second at a time; that would
# measure the scheduler, not the chat pane.
ENGINE_THREADS = 1


async def _until(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def _serve(daemon: DaemonProcess, model: Path) -> str:
    """The instance started on `model`, ready; its id."""
    options = InstanceOptions(model=str(model), ctx_size=2048, parallel=1, threads=ENGINE_THREADS)
    request = StartRequest(engine=EngineId.LLAMA_CPP, options=options)
    return (await start_ready(daemon, request)).id


def _served_name(ui: Ui, instance_id: str) -> str | None:
    """The name the chat offers that instance's model by: the gateway's short name, not the
    model's path."""
    assert ui.active_model is not None
    return next((m.id for m in ui.active_model.models if m.instance == instance_id), None)


async def _lag_while(going: Callable[[], bool]) -> list[float]:
    """How late a 5 ms timer fires, each time, while `going()` holds."""
    ticks: list[float] = []
    timer = QTimer()
    timer.setTimerType(Qt.TimerType.PreciseTimer)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(TICK_MS)
    await _until(lambda: not going(), 60, "the end")
    timer.stop()
    return [max(0.0, (b - a) * 1000 - TICK_MS) for a, b in itertools.pairwise(ticks)]


@pytest.mark.perf
def test_render_lag_with_real_replies_from_the_daemon(
    qapp: QApplication,
    loop: qasync.QEventLoop,
    report: Any,
    llama_server_binary: Path,
    tiny_gguf: Path,
    tmp_path: Path,
) -> None:
    with running_daemon(tmp_path / "home", env=path_with(llama_server_binary)) as daemon:
        ui = build_ui(qapp, daemon.home, auto_start=False, tray_available=False)
        ui.window.resize(1200, 800)
        ui.window.show()
        page = ui.window.show_page("Chat")
        assert isinstance(page, ChatPage)
        lags: list[float] = []
        rates: list[float] = []
        tokens = 0

        async def scenario() -> None:
            nonlocal tokens
            instance_id = await _serve(daemon, tiny_gguf)
            ui.bridge.start()
            await _until(lambda: ui.bridge.state == ConnectionState.CONNECTED, 20, "connected")
            await _until(lambda: _served_name(ui, instance_id) is not None, 20, "the model")
            model = _served_name(ui, instance_id)
            assert model is not None
            await _until(lambda: page.picker.findText(model) >= 0, 20, "the model picked")
            page.picker.set_model(model)
            # As long as the tiny model's context allows: about 2,000 tokens a reply.
            page.settings.max_tokens.setValue(100_000)
            for index in range(REAL_REPLIES):
                page.new_chat()  # each reply as long as the context allows
                page.input.setPlainText(f"Tell me a long story, part {index}")
                page.send()
                await _until(lambda: page.reply is not None, 20, "the reply to begin")
                lags.extend(await _lag_while(lambda: page.reply is not None))
                await _until(lambda: not page.busy, 20, "the reply to be saved")
                stats = page.transcript.messages[-1].stats
                assert stats is not None and stats.error is None, stats
                tokens += stats.completion_tokens or 0
                if stats.tokens_per_s:
                    rates.append(stats.tokens_per_s)

        try:
            loop.run_until_complete(scenario())
        finally:
            loop.run_until_complete(ui.bridge.aclose())
            ui.window.deleteLater()
    report.add("replies", REAL_REPLIES)
    report.add("tokens_streamed", tokens)
    report.add("tokens_per_s_median", round(statistics.median(rates)))
    report.add("event_loop_lag_p50_ms", round(statistics.median(lags), 2))
    report.add("event_loop_lag_p99_ms", round(percentile(lags, 99), 2))
    report.add("event_loop_lag_max_ms", round(max(lags), 2))
    report.add("engine_threads", ENGINE_THREADS)
    report.add("budget", f"lag p99 <= {P99_BUDGET_MS:.0f} ms")
    assert percentile(lags, 99) <= P99_BUDGET_MS
