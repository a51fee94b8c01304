"""The Chat page's history features beside the conversation: switching between the versions
an edit or a regenerate left, search over the list, export and import through the list's
menu, and the system-prompt presets of the settings panel."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QWidget

from roundhouse.api.chat import (
    MAX_IMPORT_BYTES,
    ChatExport,
    Conversation,
    Preset,
    PresetList,
    SearchResults,
)
from roundhouse.gui.calls.chat import ChatCalls
from roundhouse.gui.calls.op import Ops

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge
    from roundhouse.gui.widgets.chat_conversations import ConversationsView
    from roundhouse.gui.widgets.chat_settings import ChatSettingsPanel

JSON_FILTER = "Chat export (*.json)"
MARKDOWN_FILTER = "Markdown (*.md)"


class HistoryPage(Protocol):
    """What the actions need of the Chat page."""

    conversation: Conversation | None
    conversations: ConversationsView
    settings: ChatSettingsPanel

    @property
    def busy(self) -> bool: ...

    def show_conversation(self, conversation: Conversation) -> None: ...

    def open_conversation(self, conversation_id: str) -> None: ...

    def refresh(self) -> None: ...

    def say(self, text: str) -> None: ...


class ChatHistoryActions(QObject):
    """Wires the list's search and menu and the settings' presets to the daemon."""

    def __init__(self, bridge: DaemonBridge, page: HistoryPage, owner: QWidget) -> None:
        super().__init__(owner)
        self._page = page
        self._owner = owner
        self._calls = ChatCalls(bridge)
        self._ops = Ops(owner, say=page.say)
        # The last file written or read: tests and the next dialog start from it.
        self.last_path: Path | None = None
        view = page.conversations
        view.search_requested.connect(self.search)
        view.hit_opened.connect(self.open_hit)
        view.export_requested.connect(self._on_view_export_requested)
        view.import_requested.connect(self._on_view_import_requested)
        settings = page.settings
        settings.preset_save_requested.connect(self.save_preset)
        settings.preset_delete_requested.connect(self.delete_preset)

    # -- branches -------------------------------------------------------------------------

    def switch_branch(self, message_id: int) -> None:
        """Show that version of a message, and what followed it last."""
        conversation = self._page.conversation
        if conversation is None or self._page.busy:
            return
        call = self._calls.switch_branch(conversation.id, message_id)
        self._ops.run(call, self._on_switched)

    def _on_switched(self, conversation: Conversation) -> None:
        shown = self._page.conversation
        if shown is not None and shown.id == conversation.id:  # not another one opened since
            self._page.show_conversation(conversation)

    # -- search ---------------------------------------------------------------------------

    def search(self, words: str) -> None:
        if not words:
            self._ops.forget("search")
            return
        self._ops.run(self._calls.search(words), self._on_searched, latest="search")

    def _on_searched(self, results: SearchResults) -> None:
        self._page.conversations.show_results(results)

    def open_hit(self, conversation_id: str, message_id: int | None) -> None:
        """Open the conversation a hit is in; a message's hit shows the branch it is on."""
        if self._page.busy:
            return
        if message_id is None:
            self._page.open_conversation(conversation_id)
            return
        call = self._calls.switch_branch(conversation_id, message_id)
        self._ops.run(call, self._page.show_conversation)

    # -- export and import ----------------------------------------------------------------

    def _on_view_export_requested(self, kind: str) -> None:
        conversation = self._page.conversation
        if conversation is None:
            return
        suffix, kind_filter = (".md", MARKDOWN_FILTER) if kind == "md" else (".json", JSON_FILTER)
        start = str(
            (self.last_path.parent if self.last_path else Path.home())
            / _file_name(conversation.title, suffix)
        )
        path, _ = QFileDialog.getSaveFileName(
            self._owner, "Export the conversation", start, kind_filter
        )
        if path:
            self.export_to(Path(path), kind)

    def export_to(self, path: Path, kind: str) -> None:
        """Write the open conversation to `path`: "md" (the branch shown) or "json"."""
        conversation = self._page.conversation
        if conversation is None:
            return
        if kind == "md":
            call = self._calls.export_markdown(conversation.id)
        else:
            call = self._calls.export_json(conversation.id)
        self._ops.run(call, lambda answer: self._write(path, answer))

    def _write(self, path: Path, answer: ChatExport | str) -> None:
        text = answer if isinstance(answer, str) else answer.model_dump_json(indent=2) + "\n"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            self._page.say(f"Not exported: {path} cannot be written ({exc.strerror or exc}).")
            return
        self.last_path = path
        self._page.say(f"Exported to {path}.")

    def _on_view_import_requested(self) -> None:
        start = str(self.last_path.parent if self.last_path else Path.home())
        path, _ = QFileDialog.getOpenFileName(
            self._owner, "Import a conversation", start, JSON_FILTER
        )
        if path:
            self.import_from(Path(path))

    def import_from(self, path: Path) -> None:
        """Add the conversation a JSON export holds, and open it."""
        if self._page.busy:
            return
        try:
            size = path.stat().st_size
            if size > MAX_IMPORT_BYTES:
                self._page.say(
                    f"Not imported: {path.name} is {size / 1_048_576:.1f} MiB; an import may be "
                    f"at most {MAX_IMPORT_BYTES // 1_048_576} MiB."
                )
                return
            raw = path.read_bytes()
        except OSError as exc:
            self._page.say(f"Not imported: {path} cannot be read ({exc.strerror or exc}).")
            return
        self.last_path = path
        call = self._calls.import_chat(raw)
        self._ops.run(
            call,
            self._on_imported,
            on_failure=lambda failure: self._page.say(f"Not imported: {failure.detail}"),
        )

    def _on_imported(self, conversation: Conversation) -> None:
        self._page.refresh()
        self._page.show_conversation(conversation)
        self._page.say(f"Imported “{conversation.title}”.")

    # -- presets --------------------------------------------------------------------------

    def load_presets(self) -> None:
        self._ops.run(self._calls.presets(), self._on_presets_listed, latest="presets")

    def _on_presets_listed(self, listed: PresetList) -> None:
        self._page.settings.set_presets(listed.presets)

    def save_preset(self, name: str, text: str) -> None:
        self._ops.run(self._calls.save_preset(name, text), self._on_preset_saved)

    def _on_preset_saved(self, preset: Preset) -> None:
        # The panel keeps the name as typed; the list gives it as saved (an existing name
        # in another case keeps its case).
        self._page.settings.presets[preset.name] = preset.text
        self._page.settings.pick_preset(preset.name)
        self.load_presets()

    def delete_preset(self, name: str) -> None:
        self._ops.run(self._calls.delete_preset(name), lambda _: self._on_preset_deleted())

    def _on_preset_deleted(self) -> None:
        self._page.settings.pick_preset(None)
        self.load_presets()


def _file_name(title: str, suffix: str) -> str:
    """A file name from a conversation's title: letters, digits, spaces and dashes."""
    kept = "".join(c if c.isalnum() or c in " -_" else " " for c in title)
    return (" ".join(kept.split())[:60] or "conversation") + suffix
