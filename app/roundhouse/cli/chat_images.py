"""`roundhouse chat --image FILE`: the files read as the data: URLs a message carries."""

from __future__ import annotations

from pathlib import Path

from roundhouse.api.chat import MAX_IMAGES
from roundhouse.api.vision import image_data_url
from roundhouse.cli.output import fail


def read_images(paths: tuple[Path, ...]) -> tuple[str, ...]:
    """Each file as a data:image URL; a file that cannot be sent ends the command in words."""
    if len(paths) > MAX_IMAGES:
        fail(f"A message carries at most {MAX_IMAGES} images; {len(paths)} were given.")
    urls = []
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            fail(f"Cannot read the image {path}: check that it is a file you may read.")
        try:
            urls.append(image_data_url(data, path.name))
        except ValueError as exc:
            fail(str(exc))
    return tuple(urls)
