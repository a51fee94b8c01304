"""The quick chat's exchange: its turns, shown as Markdown, sent as messages, moved to a chat.

Qt-free: the window holds one Exchange and asks it what to show, send and move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from roundhouse.api.chat import (
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
    TurnRequest,
)
from roundhouse.gui.chat_reply import stats_line


@dataclass
class Turn:
    """One prompt and the reply streamed for it (so far)."""

    prompt: str
    reply: str = ""
    reasoning: str = ""
    stats: ReplyStats | None = None
    error: str = ""

    def outcome(self) -> str:
        """The status line once the reply ended: its figures, or that it stopped or failed."""
        if self.error:
            return "The reply failed."
        if self.stats is not None and self.stats.stopped:
            return "Stopped."
        return stats_line(self.stats)


@dataclass
class Exchange:
    turns: list[Turn] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.turns

    def ask(self, prompt: str) -> Turn:
        turn = Turn(prompt)
        self.turns.append(turn)
        return turn

    def messages(self) -> list[dict[str, str]]:
        """What the engine is sent: every prompt, and each reply that came before the last."""
        out: list[dict[str, str]] = []
        for turn in self.turns:
            out.append({"role": Role.USER.value, "content": turn.prompt})
            if turn.reply and turn is not self.turns[-1]:
                out.append({"role": Role.ASSISTANT.value, "content": turn.reply})
        return out

    def request(self, model: str, params: SamplingParams) -> TurnRequest:
        """The last prompt's turn, not saved: the daemon answers it after the turns before."""
        sent = self.messages()
        history = [NewMessage(role=Role(m["role"]), content=m["content"]) for m in sent[:-1]]
        return TurnRequest(
            save=False, model=model, params=params, history=history, content=sent[-1]["content"]
        )

    def markdown(self) -> str:
        """The exchange as one Markdown text: each prompt in bold after "You:", then its
        reply. (Not a Markdown quote: Qt draws a quote as a bare 40 px indent.)"""
        parts: list[str] = []
        for turn in self.turns:
            lines = [line.strip() for line in turn.prompt.split("\n") if line.strip()]
            parts.append("**You:** " + "  \n".join(_escape(line) for line in lines))
            if turn.reply:
                parts.append(turn.reply)
            elif turn.reasoning and not turn.error and turn.stats is None:
                parts.append("*Thinking…*")
            if turn.error:
                parts.append(f"**The reply failed:** {turn.error}")
            elif turn.stats is not None and turn.stats.stopped:
                parts.append("*Stopped.*")
        return "\n\n".join(parts)

    def conversation(self, model: str | None) -> NewConversation:
        """A new conversation holding the exchange, replies with their figures and thoughts."""
        messages: list[NewMessage] = []
        for turn in self.turns:
            messages.append(NewMessage(role=Role.USER, content=turn.prompt))
            stats = turn.stats
            if turn.error and (stats is None or not stats.error):
                stats = (stats or ReplyStats()).model_copy(update={"error": turn.error})
            # A reply stopped or failed before its first word is kept too: the chat says so.
            if turn.reply or turn.reasoning or stats is not None:
                messages.append(
                    NewMessage(
                        role=Role.ASSISTANT,
                        content=turn.reply,
                        reasoning=turn.reasoning or None,
                        stats=stats,
                    )
                )
        # No title: the chat store names it from the first prompt, as it names every chat.
        return NewConversation(model=model, messages=messages)


def _escape(line: str) -> str:
    """A prompt shown as typed: Markdown's own characters in it are not markup."""
    return "".join(f"\\{c}" if c in _MARKDOWN_SPECIALS else c for c in line)


_MARKDOWN_SPECIALS = frozenset("\\`*_{}[]()#+-.!|<>~")
