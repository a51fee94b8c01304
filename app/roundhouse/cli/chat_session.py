"""One chat on the terminal: each turn run by the daemon (the reply streamed as it arrives,
measured and kept in its history), shown here."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TextIO

from roundhouse.api.chat import (
    ChatDelta,
    Conversation,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
    TurnRequest,
    TurnStarted,
)
from roundhouse.cli.output import err_console
from roundhouse.client import DaemonClient
from roundhouse.client.chat_stream import take_turn

# Each engine's defaults: what the request carries when the user changed nothing.
NO_PARAMS = SamplingParams()


@dataclass(frozen=True)
class Reply:
    content: str
    reasoning: str
    stats: ReplyStats
    # Why the daemon could not keep it in the history, when it could not.
    not_saved: str | None = None


@dataclass
class ChatSession:
    """The conversation the turns go to (or, unsaved, the exchanges sent with each prompt)."""

    client: DaemonClient
    model: str
    system_prompt: str = ""
    params: SamplingParams = NO_PARAMS
    save: bool = True
    # Where the reply is written as it arrives; None writes nothing (for --json).
    out: TextIO | None = field(default_factory=lambda: sys.stdout)
    conversation: Conversation | None = None
    # The exchanges so far of a chat not saved (a saved one's are the daemon's).
    history: list[NewMessage] = field(default_factory=list)
    # Images for the next message (`--image`): sent once, with the first prompt.
    images: tuple[str, ...] = ()
    # The name of the preset the system prompt came from, kept on the conversation.
    preset: str | None = None
    _content: list[str] = field(default_factory=list)
    _reasoning: list[str] = field(default_factory=list)

    async def ask(self, prompt: str) -> Reply:
        """Run the turn of `prompt`: ChatFailed (client.chat_stream) when the reply fails.
        Cancelled (Ctrl-C) while it streams, the reply is stopped and comes back so marked."""
        self._content, self._reasoning = [], []
        request = self._request(prompt).model_copy(update={"images": self.images})
        ended = await take_turn(self.client, request, self._show, self._started)
        images, self.images = self.images, ()
        reply = ended.reply
        if not self.save:
            self.history += [NewMessage(role=Role.USER, content=prompt, images=images), reply]
        return Reply(
            reply.content, reply.reasoning or "", reply.stats or ReplyStats(), ended.not_saved
        )

    @property
    def shown(self) -> bool:
        """Whether the reply being streamed has written any text yet."""
        return bool(self._content)

    def stopped(self) -> Reply:
        """A reply cut short before the daemon said how far it came: what was shown."""
        stats = ReplyStats(model=self.model, stopped=True, completion_tokens=len(self._content))
        return Reply("".join(self._content), "".join(self._reasoning), stats)

    def reset(self) -> None:
        """Forget the exchanges: the next prompt starts a new conversation."""
        self.history = []
        self.conversation = None

    def _request(self, prompt: str) -> TurnRequest:
        if not self.save:
            return TurnRequest(
                save=False,
                model=self.model,
                system_prompt=self.system_prompt,
                params=self.params,
                history=self.history,
                content=prompt,
            )
        if self.conversation is None:
            new = NewConversation(
                model=self.model,
                system_prompt=self.system_prompt,
                preset=self.preset,
                params=self.params,
            )
            return TurnRequest(new=new, content=prompt)
        return TurnRequest(conversation_id=self.conversation.id, model=self.model, content=prompt)

    def _started(self, started: TurnStarted) -> None:
        if started.conversation is not None:
            self.conversation = started.conversation

    def _show(self, delta: ChatDelta) -> None:
        if delta.reasoning:
            self._reasoning.append(delta.reasoning)
            if self.out is not None:
                # Thinking goes beside the answer, not into it: stdout stays the reply.
                err_console.print(
                    delta.reasoning, style="dim", end="", markup=False, highlight=False
                )
        if delta.content:
            self._content.append(delta.content)
            if self.out is not None:
                self.out.write(delta.content)
                self.out.flush()
