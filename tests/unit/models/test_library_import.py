"""Importing a GGUF file: checked first, hard-linked or copied, then listed."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from roundhouse.api.library import ImportRequest, LibraryModel, LibrarySource
from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError
from roundhouse.core.models.library.importer import import_gguf
from roundhouse.core.models.library.places import LibraryPlaces, library_places
from roundhouse.core.models.library.service import LibraryService
from tests.unit.models.library_layouts import write_gguf


def service_for(tmp_path: Path, *folders: Path) -> LibraryService:
    places = LibraryPlaces(tmp_path / "cache", folders, imported=tmp_path / "data" / "imported")
    return LibraryService(lambda: places)


def imported(service: LibraryService, path: Path, folder: Path | None = None) -> LibraryModel:
    request = ImportRequest(path=str(path), folder=str(folder) if folder else None)
    return asyncio.run(service.import_gguf(request))


def test_import_links_on_one_filesystem_and_lists_the_file(tmp_path: Path) -> None:
    source = write_gguf(tmp_path / "Загрузки 下载" / "qwen3-8b-Q4_K_M.gguf", arch="qwen3")
    service = service_for(tmp_path)
    model = asyncio.run(service.import_gguf(ImportRequest(path=str(source))))
    target = tmp_path / "data" / "imported" / "qwen3-8b-Q4_K_M.gguf"
    assert model.path == str(target)
    assert (model.source, model.architecture, model.name) == (
        LibrarySource.FOLDER,
        "qwen3",
        "qwen3-8b-Q4_K_M",
    )
    assert target.stat().st_ino == source.stat().st_ino  # a hard link: no second copy
    with pytest.raises(ConflictError, match="already in the library"):
        imported(service, source)


def test_import_copies_across_filesystems(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs a second filesystem")
    folder = shm / f"roundhouse-import-{os.getpid()}"
    try:
        source = write_gguf(folder / "m-Q8_0.gguf")
        paths = import_gguf(source, tmp_path / "lib", probe=None)
        assert paths == [tmp_path / "lib" / "m-Q8_0.gguf"]
        assert paths[0].read_bytes() == source.read_bytes()
        assert paths[0].stat().st_ino != source.stat().st_ino
        assert [p.name for p in (tmp_path / "lib").iterdir()] == ["m-Q8_0.gguf"]  # no temp left
    finally:
        for leftover in folder.glob("*"):
            leftover.unlink()
        folder.rmdir()


def test_import_into_a_chosen_library_folder_only(tmp_path: Path) -> None:
    library = tmp_path / "мои модели"
    library.mkdir()
    source = write_gguf(tmp_path / "dl" / "a-Q4_0.gguf")
    service = service_for(tmp_path, library)
    model = imported(service, source, library)
    assert model.path == str(library / "a-Q4_0.gguf")
    with pytest.raises(InvalidInputError, match="not one of the library's folders"):
        imported(service, source, tmp_path / "elsewhere")


def test_what_is_not_a_gguf_is_refused_in_words(tmp_path: Path) -> None:
    service = service_for(tmp_path)
    text = tmp_path / "notes.gguf"
    text.write_text("hello", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="is not a GGUF file"):
        imported(service, text)
    broken = tmp_path / "broken-Q4_0.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 8)
    with pytest.raises(InvalidInputError, match="damaged"):
        imported(service, broken)
    with pytest.raises(NotFoundError, match="There is no file"):
        imported(service, tmp_path / "missing.gguf")
    with pytest.raises(InvalidInputError, match="full path"):
        asyncio.run(service.import_gguf(ImportRequest(path="relative/x.gguf")))
    assert not (tmp_path / "data" / "imported").exists() or not any(
        (tmp_path / "data" / "imported").iterdir()
    )


def test_a_split_gguf_is_imported_whole_from_its_first_part(tmp_path: Path) -> None:
    dl = tmp_path / "dl"
    write_gguf(dl / "big-Q2_K-00001-of-00002.gguf", split=(1, 2))
    write_gguf(dl / "big-Q2_K-00002-of-00002.gguf", split=(2, 2))
    service = service_for(tmp_path)
    with pytest.raises(InvalidInputError, match="import the first part"):
        imported(service, dl / "big-Q2_K-00002-of-00002.gguf")
    model = imported(service, dl / "big-Q2_K-00001-of-00002.gguf")
    assert len(model.paths) == 2 and model.error is None
    (dl / "lonely-Q2_K-00001-of-00003.gguf").write_bytes(
        (dl / "big-Q2_K-00001-of-00002.gguf").read_bytes()
    )
    with pytest.raises(NotFoundError, match="split in 3 parts"):
        imported(service, dl / "lonely-Q2_K-00001-of-00003.gguf")


def test_a_name_taken_by_another_file_is_a_conflict(tmp_path: Path) -> None:
    service = service_for(tmp_path)
    imported(service, write_gguf(tmp_path / "one" / "m-Q4_0.gguf", name="One"))
    with pytest.raises(ConflictError, match="already has a file named"):
        imported(service, write_gguf(tmp_path / "two" / "m-Q4_0.gguf", name="Other", layers=3))


def test_the_import_folder_comes_from_the_data_dir(tmp_path: Path) -> None:
    places = library_places(None, ["~/x"], tmp_path / "data", home=tmp_path)
    assert places.imported == tmp_path / "data" / "imported-models"
    assert places.folders == (Path("~/x").expanduser(),)
