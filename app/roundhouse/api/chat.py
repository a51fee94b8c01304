"""Schemas of the chat history: conversations, their messages and each reply's figures."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

# A message body beyond this is refused: a chat store stays bounded, and a paste this large
# is a mistake the user should hear about, not a row that slows every later read.
MAX_MESSAGE_CHARS = 2_000_000
# Images attached to one message (for a vision model), each a data: URL. A photo from a phone
# is 2-6 MB, so 4 of them fit; more is refused in words rather than slowing every read.
MAX_IMAGES = 4
MAX_IMAGE_URL_CHARS = 12_000_000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")


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


def check_image_url(url: str) -> str:
    """A `data:image/...;base64,` URL of a type vision engines read; ValueError in words."""
    kind, comma, _ = url.partition(",")
    media = kind.removeprefix("data:").removesuffix(";base64")
    if not comma or not kind.startswith("data:") or not kind.endswith(";base64"):
        raise ValueError("an attached image must be a data: URL with base64 content")
    if media not in IMAGE_TYPES:
        raise ValueError(
            f"an attached image must be PNG, JPEG, WebP or GIF, not {media or 'unknown'}"
        )
    if len(url) > MAX_IMAGE_URL_CHARS:
        raise ValueError(
            f"an attached image may be at most {MAX_IMAGE_URL_CHARS * 3 // 4 // 1_000_000} MB"
        )
    return url


class NewMessage(_Frozen):
    role: Role
    content: str = Field(max_length=MAX_MESSAGE_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    stats: ReplyStats | None = None
    images: tuple[str, ...] = Field(
        default=(),
        max_length=MAX_IMAGES,
        description="images for a vision model, each a data:image/...;base64 URL",
    )

    @field_validator("images")
    @classmethod
    def _images_are_data_urls(cls, images: tuple[str, ...]) -> tuple[str, ...]:
        for url in images:
            check_image_url(url)
        return images


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


class TurnRequest(_Frozen):
    """`POST /api/v1/chats/turns`: one turn of a chat, run by the daemon.

    Without `conversation_id` a conversation is created from `new` (its model, system prompt
    and sampling); with it, `cut_from` first deletes that message and every later one (an
    edit, a regenerate). `content` is the user's message; None answers the conversation as
    it stands (a regenerate). `model`, `system_prompt` and `params`, when given, are used for
    this reply and kept on the conversation. `save: false` keeps nothing: the reply answers
    `history` plus `content` (quick chat, `roundhouse chat --no-save`).
    """

    conversation_id: str | None = None
    new: NewConversation | None = None
    cut_from: int | None = None
    content: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    model: str | None = None
    system_prompt: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    params: SamplingParams | None = None
    save: bool = True
    history: list[NewMessage] = Field(default=[], max_length=10_000)
    images: tuple[str, ...] = Field(
        default=(),
        max_length=MAX_IMAGES,
        description="images sent with `content` for a vision model, each a data:image URL; "
        "refused in words when the model's instances cannot read images",
    )

    @field_validator("images")
    @classmethod
    def _images_are_data_urls(cls, images: tuple[str, ...]) -> tuple[str, ...]:
        for url in images:
            check_image_url(url)
        return images


class TurnStarted(_Frozen):
    """The turn's first event: the user's message is saved (when the turn saves)."""

    turn_id: str = Field(description="stop it with POST /api/v1/chats/turns/{turn_id}/stop")
    model: str
    conversation: Conversation | None = Field(
        default=None, description="as saved, the user's message included; None when not saved"
    )


class ChatDelta(_Frozen):
    """Text of the reply that arrived since the last event."""

    content: str = ""
    reasoning: str = ""


class TurnEnded(_Frozen):
    """The turn's last event: the reply with its figures (stopped or failed ones marked so),
    and the message saved for it (None when the turn does not save)."""

    reply: NewMessage
    message: Message | None = None
    not_saved: str | None = Field(default=None, description="why the reply was not saved")
