"""Schemas of the chat history: conversations, their messages and each reply's figures."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

# A message body beyond this is refused: a chat store stays bounded, and a paste this large
# is a mistake the user should hear about, not a row that slows every later read.
MAX_MESSAGE_CHARS = 2_000_000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class SamplingParams(_Frozen):
    """What the chat sends with each request; None leaves the engine's default."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)


class ReplyStats(_Frozen):
    """How one assistant reply went, measured by the client that streamed it."""

    model: str | None = None
    engine: str | None = Field(default=None, description="the engine that served it")
    instance: str | None = None
    ttft_ms: float | None = Field(default=None, description="time to the first token")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_per_s: float | None = Field(default=None, description="after the first token")
    duration_s: float | None = None
    finish_reason: str | None = None
    stopped: bool = Field(default=False, description="the user stopped it mid-stream")
    error: str | None = Field(default=None, description="why it failed, in words")


class NewMessage(_Frozen):
    role: Role
    content: str = Field(max_length=MAX_MESSAGE_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    stats: ReplyStats | None = None


class Message(NewMessage):
    id: int
    created_at: float = Field(description="seconds since the Unix epoch")


class MessageEdit(_Frozen):
    content: str = Field(max_length=MAX_MESSAGE_CHARS)


class ConversationSummary(_Frozen):
    id: str
    title: str
    model: str | None = None
    created_at: float
    updated_at: float
    message_count: int = 0


class Conversation(ConversationSummary):
    system_prompt: str = ""
    params: SamplingParams = SamplingParams()
    messages: list[Message] = []


class NewConversation(_Frozen):
    """`POST /api/v1/chats`; `messages` carries an exchange moved in from quick chat."""

    title: str | None = Field(default=None, max_length=200)
    model: str | None = None
    system_prompt: str = Field(default="", max_length=MAX_MESSAGE_CHARS)
    params: SamplingParams = SamplingParams()
    messages: list[NewMessage] = []


class ConversationUpdate(_Frozen):
    """`PATCH /api/v1/chats/{id}`: the fields given are changed, the others kept."""

    title: str | None = Field(default=None, min_length=1, max_length=200)
    model: str | None = None
    system_prompt: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    params: SamplingParams | None = None


class ConversationList(_Frozen):
    conversations: list[ConversationSummary]
