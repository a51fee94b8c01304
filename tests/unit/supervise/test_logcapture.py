"""An engine's output captured: lines taken in bursts, cut when endless, secrets hidden,
the ring and the file agreeing."""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path

from roundhouse.core.supervise.logcapture import MAX_LINE_BYTES, LogCapture


def test_lines_of_a_burst_and_a_last_line_without_end(tmp_path: Path) -> None:
    capture = LogCapture(tmp_path / "engine.log", secrets=["sk-secret"])
    stream = io.BufferedReader(io.BytesIO(b"one\ntwo key=sk-secret\r\n\nthree"))  # type: ignore[arg-type]
    capture.pump(stream)
    assert capture.tail(10) == ("one", "two key=***", "", "three")
    assert capture.count == 4
    capture.close()
    written = (tmp_path / "engine.log").read_text(encoding="utf-8").splitlines()
    assert [re.sub(r"^\S+ \S+ ", "", line) for line in written] == [
        "one",
        "two key=***",
        "",
        "three",
    ]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ", line) for line in written)
    assert "sk-secret" not in "\n".join(written)


def test_an_endless_line_is_cut_and_reading_goes_on(tmp_path: Path) -> None:
    capture = LogCapture(tmp_path / "engine.log")
    endless = b"x" * (MAX_LINE_BYTES * 2 + 10)
    capture.pump(io.BufferedReader(io.BytesIO(endless + b"\nafter\n")))  # type: ignore[arg-type]
    lines = capture.tail(10)
    assert lines[-1] == "after"
    assert all(len(line) <= MAX_LINE_BYTES for line in lines)
    capture.close()


def test_lines_written_in_pieces_through_a_pipe_arrive_whole(tmp_path: Path) -> None:
    capture = LogCapture(tmp_path / "engine.log", ring_lines=3)
    read_fd, write_fd = os.pipe()
    reader = threading.Thread(target=capture.pump, args=(os.fdopen(read_fd, "rb"),))
    reader.start()
    with os.fdopen(write_fd, "wb", buffering=0) as out:
        for piece in (b"slot 0: pro", b"mpt done\nslot 0: ", b"eval 5 tok\nlast\n"):
            out.write(piece)
    reader.join(5)
    assert capture.tail(5) == ("slot 0: prompt done", "slot 0: eval 5 tok", "last")
    lines, last, truncated = capture.since(0)
    assert lines == ["slot 0: prompt done", "slot 0: eval 5 tok", "last"]
    assert last == 3 and not truncated
    capture.close()
