"""One chat on the terminal: each reply streamed as it arrives, measured, and kept in the
daemon's history."""

from __future__ import annotations

import sys
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TextIO

from roundhouse.api.chat import (
    Conversation,
    Message,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
)
from roundhouse.cli.output import err_console
from roundhouse.client import DaemonClient
from roundhouse.client.chat_stream import (
    NO_PARAMS,
    ChatDone,
    ReplyMeter,
    history_messages,
    stream_chat,
)


@dataclass(frozen=True)
class Reply:
    content: str
    reasoning: str
    stats: ReplyStats


@dataclass
class ChatSession:
    """The exchanges so far (sent again with each prompt) and where they are saved."""

    client: DaemonClient
    model: str
    system_prompt: str = ""
    params: SamplingParams = NO_PARAMS
    save: bool = True
    # Where the reply is written as it arrives; None writes nothing (for --json).
    out: TextIO | None = field(default_factory=lambda: sys.stdout)
    conversation: Conversation | None = None
    history: list[Message] = field(default_factory=list)
    _content: list[str] = field(default_factory=list)
    _reasoning: list[str] = field(default_factory=list)
    _meter: ReplyMeter | None = None

    async def ask(self, prompt: str) -> Reply:
        """Stream the reply to `prompt`; ChatFailed when it fails. Cancelled (Ctrl-C), the
        reply so far is in `stopped()`."""
        self._content, self._reasoning = [], []
        self._meter = ReplyMeter(self.model)
        sent = [*self.history, _local(Role.USER, prompt)]
        messages = history_messages(self.system_prompt, sent)
        stream = stream_chat(self.client, self.model, messages, self.params, meter=self._meter)
        async with aclosing(stream) as events:
            async for event in events:
                if isinstance(event, ChatDone):
                    return self._reply(event.stats)
                self._show(event.content, event.reasoning)
        raise AssertionError("stream_chat ends with ChatDone or raises")  # pragma: no cover

    @property
    def shown(self) -> bool:
        """Whether the reply being streamed has written any text yet."""
        return bool(self._content)

    def stopped(self) -> Reply:
        """The reply cut short by the user, with what was measured until then."""
        meter = self._meter or ReplyMeter(self.model)
        meter.end()
        return self._reply(meter.stats(stopped=True))

    async def keep(self, prompt: str, reply: Reply) -> None:
        """Remember the exchange for the next prompt, and save it unless told not to."""
        user = NewMessage(role=Role.USER, content=prompt)
        answer = NewMessage(
            role=Role.ASSISTANT,
            content=reply.content,
            reasoning=reply.reasoning or None,
            stats=reply.stats,
        )
        self.history += [_local(Role.USER, prompt), _local(Role.ASSISTANT, reply.content)]
        if not self.save:
            return
        if self.conversation is None:
            new = NewConversation(
                model=self.model,
                system_prompt=self.system_prompt,
                params=self.params,
                messages=[user, answer],
            )
            self.conversation = await self.client.create_chat(new)
        else:
            for message in (user, answer):
                await self.client.add_message(self.conversation.id, message)

    def reset(self) -> None:
        """Forget the exchanges: the next prompt starts a new conversation."""
        self.history = []
        self.conversation = None

    def _reply(self, stats: ReplyStats) -> Reply:
        return Reply("".join(self._content), "".join(self._reasoning), stats)

    def _show(self, content: str, reasoning: str) -> None:
        if reasoning:
            self._reasoning.append(reasoning)
            if self.out is not None:
                # Thinking goes beside the answer, not into it: stdout stays the reply.
                err_console.print(reasoning, style="dim", end="", markup=False, highlight=False)
        if content:
            self._content.append(content)
            if self.out is not None:
                self.out.write(content)
                self.out.flush()


def _local(role: Role, content: str) -> Message:
    """A message held only here, to send again with the next prompt."""
    return Message(id=0, created_at=0.0, role=role, content=content)
