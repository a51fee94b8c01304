"""Images in the chat (ADR 45): the strip of images attached to the next message (Attach,
paste, drop), their thumbnails on a sent message, and whether the chat's model can see."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QBoxLayout,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QWidget,
)

from roundhouse.api.chat import MAX_IMAGES
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.api.vision import image_data_url, no_vision_words

THUMB_PX = 72
# The file dialog's filter: what vision engines read.
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.gif)"


def model_sees(instances: Iterable[InstanceInfo] | None, model: str) -> bool | None:
    """As the daemon decides it: True when a ready instance serving `model` reads images,
    False when each that says does not, None when none says."""
    said = [
        i.vision
        for i in instances or ()
        if i.status is InstanceStatus.READY and model in i.models and i.vision is not None
    ]
    if any(said):
        return True
    return False if said else None


def image_png(image: QImage) -> bytes:
    """A pasted image (the clipboard holds pixels, not a file) as PNG bytes."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # The stubs ask for bytes; PySide6 takes the format as a str at run time.
    image.save(buffer, "PNG")  # type: ignore[call-overload]
    buffer.close()
    return bytes(data.data())


def thumbnail(url: str, size: int = THUMB_PX) -> QPixmap:
    """A data:image URL as a pixmap at most `size` pixels on its longer side."""
    pixmap = QPixmap()
    _, _, payload = url.partition(",")
    pixmap.loadFromData(base64.b64decode(payload))
    if pixmap.isNull():
        return pixmap
    return pixmap.scaled(
        size,
        size,
        Qt.AspectRatioMode.KeepAspectRatio,
        Qt.TransformationMode.SmoothTransformation,
    )


def thumbnails_row(images: Sequence[str]) -> QWidget:
    """The images of a message, side by side (each with its place as its accessible name)."""
    row = QWidget()
    row.setObjectName("chatThumbnails")
    layout = QHBoxLayout(row)
    layout.setContentsMargins(0, 0, 0, 0)
    for number, url in enumerate(images, 1):
        label = QLabel()
        label.setPixmap(thumbnail(url))
        label.setAccessibleName(f"attached image {number} of {len(images)}")
        layout.addWidget(label)
    layout.addStretch(1)
    return row


def show_thumbnails(message_widget: QWidget, images: Sequence[str]) -> None:
    """Put a message's images under its text (before its action bar), once."""
    layout = message_widget.layout()
    old = message_widget.findChild(QWidget, "chatThumbnails")
    if old is not None:
        old.deleteLater()
    if not images or layout is None:
        return
    row = thumbnails_row(images)
    row.setParent(message_widget)
    if isinstance(layout, QBoxLayout):
        # The action bar is last: the images go just above it.
        layout.insertWidget(max(layout.count() - 1, 0), row)


class ChatAttachments(QWidget):
    """The images for the next message, each a thumbnail with a remove button, and the
    words when one cannot be attached or the model cannot read it."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._images: list[str] = []
        # Whether the note says the model cannot see (taken back when that changes).
        self._refused = False
        self.file_dialog: QFileDialog | None = None
        self.attach_button = QPushButton("Attach")
        self.attach_button.setToolTip(
            "Attach an image for a vision model (or paste or drop one on the message box)"
        )
        self.attach_button.clicked.connect(self.choose_files)
        self.strip = QHBoxLayout()
        self.strip.setContentsMargins(0, 0, 0, 0)
        self.note = QLabel()
        self.note.setObjectName("dialogError")
        self.note.setWordWrap(True)
        self.note.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.strip)
        layout.addWidget(self.note, 1)
        self.setVisible(False)

    def images(self) -> tuple[str, ...]:
        return tuple(self._images)

    def clear(self) -> None:
        self._images = []
        self._redraw()

    def say(self, text: str) -> None:
        """A sentence beside the images ('' hides it)."""
        self.note.setText(text)
        self.note.setVisible(bool(text))
        self.setVisible(bool(self._images) or bool(text))

    def add_image(self, data: bytes, name: str) -> bool:
        """Attach the image's bytes; False (and the reason shown) when it cannot be."""
        if len(self._images) >= MAX_IMAGES:
            self.say(f"A message carries at most {MAX_IMAGES} images.")
            return False
        try:
            url = image_data_url(data, name)
        except ValueError as exc:
            self.say(str(exc))
            return False
        self._images.append(url)
        self.say("")
        self._redraw()
        return True

    def add_files(self, paths: Sequence[str]) -> None:
        for path in paths:
            try:
                data = Path(path).read_bytes()
            except OSError:
                self.say(f"Cannot read {Path(path).name}: check that it is a file you may read.")
                continue
            self.add_image(data, Path(path).name)

    def add_pixels(self, image: QImage) -> None:
        if not image.isNull():
            self.add_image(image_png(image), "the pasted image")

    def choose_files(self) -> None:
        box = QFileDialog(self.window(), "Attach images", str(Path.home()))
        box.setFileMode(QFileDialog.FileMode.ExistingFiles)
        box.setNameFilters([IMAGE_FILTER, "All files (*)"])
        box.filesSelected.connect(self.add_files)
        self.file_dialog = box
        box.open()

    def remove(self, index: int) -> None:
        if 0 <= index < len(self._images):
            del self._images[index]
            self._redraw()

    def _redraw(self) -> None:
        while self.strip.count():
            item = self.strip.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for index, url in enumerate(self._images):
            cell = QWidget()
            cell_layout = QHBoxLayout(cell)
            cell_layout.setContentsMargins(0, 0, 0, 0)
            cell_layout.setSpacing(0)
            picture = QLabel()
            picture.setPixmap(thumbnail(url, 48))
            picture.setAccessibleName(f"image {index + 1} to send")
            remove = QToolButton()
            remove.setText("x")
            remove.setToolTip("Remove this image")
            remove.setAccessibleName(f"remove image {index + 1}")
            remove.clicked.connect(lambda _=False, i=index: self.remove(i))
            cell_layout.addWidget(picture)
            cell_layout.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
            self.strip.addWidget(cell)
        self.setVisible(bool(self._images) or not self.note.isHidden())
        self.changed.emit()

    def check_model(self, instances: Iterable[InstanceInfo] | None, model: str) -> bool:
        """Say, as soon as images are attached, when the chat's model cannot read them;
        False then (the send is refused with the same words the daemon would give)."""
        if self._images and model and model_sees(instances, model) is False:
            self.say(no_vision_words(model))
            self._refused = True
            return False
        if self._refused:
            self._refused = False
            self.say("")
        return True
