"""Reading the header of a GGUF file on disk (blocking: callers run it in a thread)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from roundhouse.core.errors import NotFoundError
from roundhouse.core.knowledge.gguf.errors import GgufError
from roundhouse.core.knowledge.gguf.header import GgufHeader
from roundhouse.core.knowledge.gguf.parser import HeaderParser
from roundhouse.core.knowledge.gguf.sources import open_file_source
from roundhouse.core.knowledge.gguf.values import GgufValue


def read_gguf_header(path: Path) -> GgufHeader:
    """The header of the GGUF file at `path`, reading only its first bytes (the metadata
    and tensor infos, a few MiB at most, never the weights).

    Raises NotFoundError when there is no file, GgufError when it is not a readable GGUF.
    """
    with _parser(Path(path)) as parser:
        return parser.run()


def read_gguf_metadata(path: Path, enough: Callable[[Mapping[str, GgufValue]], bool]) -> GgufHeader:
    """The first metadata entries of the file at `path`, up to where `enough(metadata)`
    holds (an incomplete header: a list needs the model's name and kind, which come before
    the tokenizer's megabytes), or the whole header when that never happens. Raises as
    read_gguf_header does."""
    with _parser(Path(path)) as parser:
        partial = parser.run_until(enough)
        return partial if partial is not None else parser.run()


@contextmanager
def _parser(path: Path) -> Iterator[HeaderParser]:
    """A parser over the open file; errors in words that name the file."""
    try:
        file, source = open_file_source(path)
    except FileNotFoundError:
        raise NotFoundError(f"There is no file at {path}. Check the path.") from None
    except IsADirectoryError:
        raise GgufError(
            "it is a folder", source=str(path), advice="choose the .gguf file inside it"
        ) from None
    except OSError as exc:
        raise GgufError(
            f"it cannot be opened ({exc.strerror or exc})",
            source=str(path),
            advice="check that you may read it",
        ) from None
    with file:
        try:
            yield HeaderParser(source)
        except GgufError as exc:
            raise exc.located(str(path)) from None
        except OSError as exc:
            raise GgufError(
                f"reading it failed ({exc.strerror or exc})",
                source=str(path),
                advice="check the disk it is on, then try again",
            ) from None
