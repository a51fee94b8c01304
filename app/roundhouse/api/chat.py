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
# SQLite's largest rowid: a message id beyond it is no message (and no SQLite integer).
MAX_ROW_ID = 2**63 - 1
# A preset's name is a label in a menu.
MAX_PRESET_NAME = 80
# Search answers at most this many hits: a list to read, not a dump of the history.
MAX_SEARCH_HITS = 200
# An imported file: below the control API's body cap (32 MiB), so a refusal is ours, in words.
MAX_IMPORT_BYTES = 30 * 1024 * 1024
MAX_IMPORT_MESSAGES = 10_000
EXPORT_FORMAT = "roundhouse-chat"
EXPORT_VERSION = 1


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
    parent_id: int | None = Field(default=None, description="the message it answers or follows")
    sibling_ids: tuple[int, ...] = Field(
        default=(),
        description="the versions of this message (itself included), oldest first: an edit "
        "or a regenerate adds one; switch with POST /api/v1/chats/{id}/branch",
    )

    @property
    def branch(self) -> int:
        """Which version this is, from 1 (the "2" of "< 2/3 >")."""
        return self.sibling_ids.index(self.id) + 1 if self.id in self.sibling_ids else 1

    @property
    def branches(self) -> int:
        """How many versions there are (the "3" of "< 2/3 >")."""
        return max(len(self.sibling_ids), 1)


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
    """A conversation as read: `messages` is the path shown, from the first message to the
    current branch's last (the other branches are in the export)."""

    system_prompt: str = ""
    preset: str | None = Field(default=None, description="the preset the prompt came from")
    params: SamplingParams = SamplingParams()
    messages: list[Message] = []


class NewConversation(_Frozen):
    """`POST /api/v1/chats`; `messages` carries an exchange moved in from quick chat."""

    title: str | None = Field(default=None, max_length=200)
    model: str | None = None
    system_prompt: str = Field(default="", max_length=MAX_MESSAGE_CHARS)
    preset: str | None = Field(default=None, max_length=MAX_PRESET_NAME)
    params: SamplingParams = SamplingParams()
    messages: list[NewMessage] = []


class ConversationUpdate(_Frozen):
    """`PATCH /api/v1/chats/{id}`: the fields given are changed, the others kept."""

    title: str | None = Field(default=None, min_length=1, max_length=200)
    model: str | None = None
    system_prompt: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    preset: str | None = Field(default=None, max_length=MAX_PRESET_NAME)
    params: SamplingParams | None = None


class ConversationList(_Frozen):
    conversations: list[ConversationSummary]


class TurnRequest(_Frozen):
    """`POST /api/v1/chats/turns`: one turn of a chat, run by the daemon.

    Without `conversation_id` a conversation is created from `new` (its model, system prompt
    and sampling); with it, `cut_from` first goes back to just before that message, keeping
    it and what followed as a branch (an edit, a regenerate): the new message or reply
    becomes its sibling. `content` is the user's message; None answers the conversation as
    it stands (a regenerate). `model`, `system_prompt` (with `preset`, the name it came from)
    and `params`, when given, are used for this reply and kept on the conversation.
    `save: false` keeps nothing: the reply answers `history` plus `content` (quick chat,
    `roundhouse chat --no-save`).
    """

    conversation_id: str | None = None
    new: NewConversation | None = None
    cut_from: int | None = Field(default=None, ge=1, le=MAX_ROW_ID)
    content: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    model: str | None = None
    system_prompt: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    preset: str | None = Field(default=None, max_length=MAX_PRESET_NAME)
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


class BranchSwitch(_Frozen):
    """`POST /api/v1/chats/{id}/branch`: show this version of a message; the path follows
    its newest descendant."""

    message_id: int = Field(ge=1, le=MAX_ROW_ID)


class SearchHit(_Frozen):
    conversation_id: str
    title: str
    updated_at: float
    message_id: int | None = Field(default=None, description="None: the title matched")
    role: Role | None = None
    snippet: str = Field(description="the matching text with a little around it")


class SearchResults(_Frozen):
    query: str
    hits: list[SearchHit]
    truncated: bool = Field(default=False, description="more matched than `limit`")


class Preset(_Frozen):
    """A saved, named system prompt."""

    name: str = Field(min_length=1, max_length=MAX_PRESET_NAME)
    text: str = Field(max_length=MAX_MESSAGE_CHARS)

    @field_validator("name")
    @classmethod
    def _name_is_a_label(cls, name: str) -> str:
        name = " ".join(name.split())
        if not name:
            raise ValueError("a preset's name must not be blank")
        if "/" in name:
            # It is part of a route's path (/chats/presets/{name}).
            raise ValueError("a preset's name may not contain /")
        return name


class PresetText(_Frozen):
    """`PUT /api/v1/chats/presets/{name}`: the text saved under that name."""

    text: str = Field(max_length=MAX_MESSAGE_CHARS)


class PresetList(_Frozen):
    presets: list[Preset]


class ExportedMessage(NewMessage):
    """One message of an export; `id` and `parent` name messages of the same file only."""

    id: int
    parent: int | None = None
    created_at: float


class ChatExport(_Frozen):
    """A conversation with every branch, as `roundhouse chats export --format json` writes
    it and import reads it. Messages come parents first; `current` is the last message of
    the branch shown."""

    format: str = EXPORT_FORMAT
    version: int = EXPORT_VERSION
    title: str = Field(max_length=200)
    model: str | None = None
    system_prompt: str = Field(default="", max_length=MAX_MESSAGE_CHARS)
    preset: str | None = Field(default=None, max_length=MAX_PRESET_NAME)
    params: SamplingParams = SamplingParams()
    created_at: float
    updated_at: float
    current: int | None = None
    messages: list[ExportedMessage] = Field(default=[], max_length=MAX_IMPORT_MESSAGES)
