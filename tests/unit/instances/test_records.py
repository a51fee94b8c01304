"""The instance records file: round trip, tolerance of a missing or corrupt file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from roundhouse.api.engines import EngineId
from roundhouse.core.instances import InstanceRecord, RecordStore
from roundhouse.core.instances.records import RECORDS_FILE


def record(instance_id: str = "abc", **changes: object) -> InstanceRecord:
    fields: dict[str, object] = {
        "id": instance_id,
        "engine": EngineId.LLAMA_CPP,
        "model": "/models/модель 模型.gguf",
        "host": "127.0.0.1",
        "port": 8080,
        "pid": 4242,
        "create_time": 1700000000.25,
        "argv": ("llama-server", "-m", "/models/модель 模型.gguf", "--port", "8080"),
        "log_path": "/logs/llama.cpp-abc.log",
        "started_at": 1700000000.5,
        "base_url": "http://127.0.0.1:8080/v1",
        "probe_url": "http://127.0.0.1:8080/health",
        **changes,
    }
    return InstanceRecord(**fields)  # type: ignore[arg-type]


def test_round_trip(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "state")
    saved = [record("a"), record("b", model=None, create_time=None, port=9000)]
    store.save(saved)
    assert store.load() == saved
    assert RecordStore(tmp_path / "state").load() == saved


def test_missing_file_is_no_records(tmp_path: Path) -> None:
    assert RecordStore(tmp_path / "nowhere").load() == []


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe garbage",
        b"[]",
        b'{"version": 99, "instances": []}',
        b'{"version": 1, "instances": {}}',
        b'{"version": 1, "instances": [{"id": "a"}]}',
    ],
)
def test_corrupt_file_is_moved_aside_with_a_warning(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    store = RecordStore(tmp_path)
    store.path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert store.load() == []
    assert not store.path.exists()
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(f"{RECORDS_FILE}.corrupt-")]
    assert len(aside) == 1 and aside[0].read_bytes() == content
    assert "corrupt" in caplog.text
    # The next save starts a fresh file.
    store.save([record()])
    assert store.load() == [record()]


@pytest.mark.parametrize(
    ("key", "value"),
    [("pid", "4242"), ("port", True), ("engine", "no-such-engine"), ("argv", ["a", 1])],
)
def test_a_record_of_the_wrong_shape_is_corrupt(tmp_path: Path, key: str, value: object) -> None:
    store = RecordStore(tmp_path)
    entry = {**record().to_json(), key: value}
    store.path.write_text(json.dumps({"version": 1, "instances": [entry]}), encoding="utf-8")
    assert store.load() == []
    assert not store.path.exists()
