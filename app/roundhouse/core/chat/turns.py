"""A chat turn run by the daemon: the user's message saved, the reply streamed through the
gateway and measured, then saved with its figures however it ends (whole, stopped, failed).

One rule for every client (the Chat page, quick chat, `roundhouse chat`, the first-run guide,
`roundhouse setup`): a turn that saves keeps the user's message before the reply begins,
and keeps the reply when it ends; a reply stopped (by `stop`, or by its client going away)
is kept as far as it came, marked stopped; a failed one is kept with its error, and is left
out of what later turns send the engine.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass, field
from typing import Any

from roundhouse.api.chat import (
    ChatDelta,
    Conversation,
    ConversationUpdate,
    Message,
    NewConversation,
    NewMessage,
    ReplyStats,
    Role,
    SamplingParams,
    TurnEnded,
    TurnRequest,
    TurnStarted,
)
from roundhouse.core.chat.meter import ReplyMeter, error_message, parse_chunk
from roundhouse.core.chat.store import ChatStore
from roundhouse.core.chat.vision import Sees, check_sees, content, engine_error, has_images
from roundhouse.core.errors import InvalidInputError, RoundhouseError

log = logging.getLogger(__name__)

NO_MODEL = (
    "Choose a model for this chat first: start one on the Engines page (or with "
    "`roundhouse engines start`), or name one the gateway lists."
)
BROKE_OFF = "The reply broke off before it was complete; try again."


@dataclass(frozen=True)
class GatewayAnswer:
    """The gateway's answer to one chat completion: the `data:` payloads of its events when
    it streams, else `body`, its error."""

    status: int
    headers: Mapping[str, str]
    payloads: AsyncIterator[str] | None = None
    body: bytes = b""


# Opens the gateway's reply to one chat completion body; leaving it closes the reply, which
# stops the engine generating.
OpenReply = Callable[[dict[str, Any]], AbstractAsyncContextManager[GatewayAnswer]]
# Told of each reply saved: the chat's model becomes the active one.
Answered = Callable[[NewMessage], None]


def request_body(
    model: str, messages: Sequence[dict[str, Any]], params: SamplingParams
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # Only what the user set: None leaves the engine's (or the model's) default.
    body.update(params.model_dump(exclude_none=True))
    return body


def history_messages(
    system_prompt: str, messages: Sequence[Message | NewMessage]
) -> list[dict[str, Any]]:
    """A conversation as the engine should read it: the system prompt, then each message;
    failed replies are left out (they hold no answer, only our error)."""
    sent: list[dict[str, Any]] = (
        [{"role": "system", "content": system_prompt}] if system_prompt.strip() else []
    )
    for message in messages:
        if message.role == Role.ASSISTANT and message.stats and message.stats.error:
            continue
        sent.append(
            {"role": message.role.value, "content": content(message.content, message.images)}
        )
    return sent


@dataclass
class Turn:
    """One turn between its start (the user's message saved) and its end."""

    id: str
    model: str
    body: dict[str, Any]
    conversation: Conversation | None
    meter: ReplyMeter
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    error: str | None = None
    stopped: bool = False


class ChatTurns:
    """Runs turns, and stops one on request."""

    def __init__(self, store: ChatStore, sees: Sees | None = None) -> None:
        self._store = store
        # Whether a model's instances read images: a turn with images for one that cannot
        # is refused before anything is saved or sent.
        self._sees = sees
        self._running: dict[str, asyncio.Task[None]] = {}
        # Saves of turns whose client left: kept referenced until they end.
        self._saving: set[asyncio.Task[TurnEnded]] = set()

    def stop(self, turn_id: str) -> bool:
        """Stop the turn's reply; it ends with what came, saved. False: no such turn runs."""
        producer = self._running.get(turn_id)
        if producer is None or producer.done():
            return False
        producer.cancel()
        return True

    async def begin(self, request: TurnRequest) -> Turn:
        """The turn set up, the user's message saved: a refusal raised here (no such
        conversation, no model) answers the request before anything streams."""
        if not request.save:
            return self._unsaved(request)
        await self._check_images(request)
        conversation = await self._conversation_for(request)
        if request.content is not None:
            user = NewMessage(role=Role.USER, content=request.content, images=request.images)
            await self._store.add_message(conversation.id, user)
            conversation = await self._store.conversation(conversation.id)
        # Checked before anything changed (`_conversation_for`).
        model = conversation.model or ""
        sent = history_messages(conversation.system_prompt, conversation.messages)
        return self._turn(model, sent, conversation.params, conversation)

    async def run(
        self, turn: Turn, open_reply: OpenReply, answered: Answered
    ) -> AsyncIterator[TurnStarted | ChatDelta | TurnEnded]:
        """TurnStarted, each piece of the reply, then TurnEnded. Closed early (the client
        went away, the daemon stops), the reply is stopped and saved all the same."""
        queue: asyncio.Queue[ChatDelta | None] = asyncio.Queue()
        producer = asyncio.create_task(self._produce(turn, open_reply, queue))
        self._running[turn.id] = producer
        ended = False
        try:
            yield TurnStarted(turn_id=turn.id, model=turn.model, conversation=turn.conversation)
            while (delta := await queue.get()) is not None:
                yield delta
            ended = True
            yield await self._end(turn, producer, answered)
        finally:
            self._running.pop(turn.id, None)
            if not ended:
                producer.cancel()
                saving = asyncio.ensure_future(self._end(turn, producer, answered))
                self._saving.add(saving)
                saving.add_done_callback(self._saving.discard)
                # The client is gone: the save goes on without it, however this is cancelled.
                with suppress(asyncio.CancelledError):
                    await asyncio.shield(saving)

    # -- setting a turn up --------------------------------------------------------------

    def _unsaved(self, request: TurnRequest) -> Turn:
        if not request.model:
            raise InvalidInputError(NO_MODEL)
        if request.content is None:
            raise InvalidInputError("A turn that is not saved needs the user's message.")
        check_sees(self._sees, request.model, request.images)
        user = NewMessage(role=Role.USER, content=request.content, images=request.images)
        sent = [*request.history, user]
        messages = history_messages(request.system_prompt or "", sent)
        return self._turn(request.model, messages, request.params or SamplingParams(), None)

    async def _check_images(self, request: TurnRequest) -> None:
        """Images go with a message, to a model that can read them (when that is known)."""
        if not request.images:
            return
        if request.content is None:
            raise InvalidInputError("Attach images to a message: write one to send them with.")
        model = request.model or (request.new.model if request.new else None)
        if not model and request.conversation_id is not None:
            model = (await self._store.conversation(request.conversation_id)).model
        if model:
            check_sees(self._sees, model, request.images)

    async def _conversation_for(self, request: TurnRequest) -> Conversation:
        """The conversation the turn continues (cut and updated as asked), or a new one;
        refused, before anything changes, when it has no model."""
        given = _given(request)
        if request.conversation_id is None:
            new = request.new or NewConversation()
            if not (request.model or new.model):
                raise InvalidInputError(NO_MODEL)
            return await self._store.create(new.model_copy(update=given) if given else new)
        chat_id = request.conversation_id
        conversation = await self._store.conversation(chat_id)
        if not (request.model or conversation.model):
            raise InvalidInputError(NO_MODEL)
        if request.cut_from is not None:
            # The old message and what followed stay, a branch to switch back to.
            await self._store.rewind(chat_id, request.cut_from)
        changed = {k: v for k, v in given.items() if getattr(conversation, k) != v}
        if changed:
            await self._store.update(chat_id, ConversationUpdate(**changed))
        if request.cut_from is not None or changed:
            conversation = await self._store.conversation(chat_id)
        return conversation

    def _turn(
        self,
        model: str,
        messages: list[dict[str, Any]],
        params: SamplingParams,
        conversation: Conversation | None,
    ) -> Turn:
        return Turn(
            id=uuid.uuid4().hex,
            model=model,
            body=request_body(model, messages, params),
            conversation=conversation,
            meter=ReplyMeter(model),
        )

    # -- the reply ----------------------------------------------------------------------

    async def _produce(
        self, turn: Turn, open_reply: OpenReply, queue: asyncio.Queue[ChatDelta | None]
    ) -> None:
        """Stream the reply into `queue`, then None. Cancelled (a stop), it ends stopped."""
        meter = turn.meter
        meter.start()
        complete = False
        try:
            async with open_reply(turn.body) as answer:
                meter.read_headers(answer.headers)
                if answer.payloads is None:
                    turn.error = _refusal(answer)
                    return
                async for data in answer.payloads:
                    if data.strip() == "[DONE]":
                        complete = True
                        break
                    chunk = parse_chunk(data)
                    if chunk.error is not None:
                        turn.error = chunk.error
                        return
                    meter.add(chunk)
                    if chunk.content or chunk.reasoning:
                        turn.content.append(chunk.content)
                        turn.reasoning.append(chunk.reasoning)
                        queue.put_nowait(
                            ChatDelta(content=chunk.content, reasoning=chunk.reasoning)
                        )
            if not complete and meter.finish_reason is None:
                turn.error = BROKE_OFF
        except asyncio.CancelledError:
            turn.stopped = True
        except RoundhouseError as exc:
            turn.error = exc.detail
        except Exception as exc:  # any failure of the reply is the reply's, in words
            log.exception("A chat reply failed")
            turn.error = f"The reply failed ({type(exc).__name__}: {exc}). Try again."
        finally:
            meter.end()
            queue.put_nowait(None)

    async def _end(self, turn: Turn, producer: asyncio.Task[None], answered: Answered) -> TurnEnded:
        """The reply as it ended, saved when the turn saves."""
        # Waited, not awaited: a producer cancelled before it ran raises nothing here.
        await asyncio.wait({producer})
        if producer.cancelled():
            turn.stopped = True
        if turn.error is not None:
            # An engine that cannot read the images says so in the same words as a refusal.
            turn.error = engine_error(turn.error, turn.model, has_images(turn.body))
        stats: ReplyStats = turn.meter.stats(stopped=turn.stopped, error=turn.error)
        reasoning = "".join(turn.reasoning)
        reply = NewMessage(
            role=Role.ASSISTANT,
            content="".join(turn.content),
            reasoning=reasoning or None,
            stats=stats,
        )
        if turn.conversation is None:
            return TurnEnded(reply=reply)
        try:
            message = await self._store.add_message(turn.conversation.id, reply)
        except RoundhouseError as exc:
            return TurnEnded(reply=reply, not_saved=exc.detail)
        answered(reply)
        return TurnEnded(reply=reply, message=message)


def _given(request: TurnRequest) -> dict[str, Any]:
    """The conversation's fields the request sets for this reply."""
    given: dict[str, Any] = {}
    if request.model:
        given["model"] = request.model
    if request.system_prompt is not None:
        given["system_prompt"] = request.system_prompt
        given["preset"] = request.preset
    if request.params is not None:
        given["params"] = request.params
    return given


def _refusal(answer: GatewayAnswer) -> str:
    """The gateway's refusal in its own words."""
    try:
        message = error_message(json.loads(answer.body))
    except ValueError:
        message = None
    if message is not None:
        return message
    text = answer.body.decode(errors="replace").strip()[:300]
    return f"The gateway answered {answer.status}" + (f": {text}" if text else ".")
