"""Names clients can send: library ids (stable, unique, never a path), presets winning over
the library, the launch words the fit estimate's choice gives, aliases' checks, and tables
that never cut an id."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError
from rich.console import Console

from roundhouse.api.engines import EngineId, InstanceOptions, ModelFormat
from roundhouse.api.fit import AdviceKind, FitAdvice, FitEngine, FitReport, FitVerdict
from roundhouse.api.gateway import GatewayModel, ModelState
from roundhouse.api.instances import Preset
from roundhouse.api.library import LibraryList, LibraryModel, LibrarySource
from roundhouse.api.settings import GatewaySettings
from roundhouse.cli.tables import Column, fitted
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.gateway.aliases import check_aliases
from roundhouse.core.gateway.launch import Launch, choose_launch
from roundhouse.core.gateway.library import (
    LibraryStartables,
    Startable,
    combined,
    engine_for,
    find,
    from_presets,
    listed_id,
)
from roundhouse.core.gateway.listing import Listed, with_aliases
from roundhouse.core.gateway.router import short_name
from roundhouse.core.models.library.names import served_ids


def _model(
    id_: str,
    path: str | None,
    source: LibrarySource = LibrarySource.FOLDER,
    fmt: ModelFormat = ModelFormat.GGUF,
    name: str = "",
    repo: str | None = None,
) -> LibraryModel:
    return LibraryModel(
        id=id_,
        name=name or id_,
        source=source,
        format=fmt,
        path=path,
        repo=repo,
        engines=[EngineId.LLAMA_CPP] if fmt == ModelFormat.GGUF else [EngineId.VLLM],
    )


def test_ids_are_file_stems_repo_names_and_tags_never_paths() -> None:
    models = [
        _model("a1", "/m/Qwen3-8B-Q4_K_M.gguf"),
        _model("b2", "/m/big/Llama-70B-Q4_K_M-00001-of-00003.gguf"),
        _model(
            "c3",
            "/hf/models--Qwen--Qwen3-0.6B/snapshots/x",
            LibrarySource.HF_CACHE,
            ModelFormat.SAFETENSORS,
            repo="Qwen/Qwen3-0.6B",
        ),
        _model("d4", "/m/My Model", fmt=ModelFormat.SAFETENSORS),
        _model("e5", None, LibrarySource.OLLAMA, name="qwen3:8b"),
    ]
    assert served_ids(models) == {
        "a1": "Qwen3-8B-Q4_K_M",
        "b2": "Llama-70B-Q4_K_M",
        "c3": "Qwen3-0.6B",
        "d4": "My-Model",
        "e5": "qwen3:8b",
    }


def test_ids_are_unique_and_the_same_whatever_the_order() -> None:
    same = [
        _model("ffff0000aaaa1111", "/lms/tiny.gguf", LibrarySource.LMSTUDIO),
        _model("0000ffffbbbb2222", "/folder/tiny.gguf"),
        _model("1111eeeecccc3333", "/folder2/TINY.gguf"),
        _model("2222ddddeeee4444", "/hf/tiny.gguf", LibrarySource.HF_CACHE),
    ]
    ids = served_ids(same)
    # The Hub cache keeps the bare name; the others are told apart by source, then id.
    assert ids["2222ddddeeee4444"] == "tiny"
    assert ids["0000ffffbbbb2222"] == "tiny-folder"
    assert ids["ffff0000aaaa1111"] == "tiny-lmstudio"
    assert ids["1111eeeecccc3333"] == "TINY-1111ee"
    assert len({i.casefold() for i in ids.values()}) == len(same)
    assert served_ids(list(reversed(same))) == ids
    assert not any("/" in i for i in ids.values())


def test_a_path_is_listed_by_its_name() -> None:
    assert short_name("/home/me/models/tiny.gguf") == "tiny"
    assert short_name("C:\\models\\Tiny.GGUF") == "Tiny"
    assert short_name("/home/me/models/Qwen3-0.6B") == "Qwen3-0.6B"
    assert short_name("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"
    assert short_name("qwen3:8b") == "qwen3:8b"
    assert listed_id(EngineId.VLLM, "/srv/models/Qwen3-0.6B", None) == "Qwen3-0.6B"


def _library_entry(id_: str, model: str) -> Startable:
    return Startable(
        id=id_, engine=EngineId.LLAMA_CPP, model=model, preset=None, names=frozenset({model})
    )


def test_presets_win_over_the_library() -> None:
    presets = from_presets(
        [Preset(engine=EngineId.LLAMA_CPP, model="/m/a.gguf", options=InstanceOptions())]
    )
    library = [_library_entry("a", "/m/a.gguf"), _library_entry("b", "/m/b.gguf")]
    library.append(_library_entry("a", "/other/a.gguf"))
    both = combined(lambda: list(presets), lambda: library)()
    assert [(s.id, s.preset) for s in both] == [
        ("a", "default"),
        ("b", None),
        ("a-llama.cpp", None),
    ]
    assert find(both, "a") == both[0]
    assert find(both, "/other/a.gguf") == both[2]


def test_an_ollama_model_starts_on_ollama_and_a_broken_one_not_at_all() -> None:
    assert engine_for(_model("o", None, LibrarySource.OLLAMA)) == EngineId.OLLAMA
    broken = _model("x", "/m/x.gguf").model_copy(update={"error": "cut short"})
    assert engine_for(broken) is None


def _report(
    verdict: FitVerdict, gpu_layers: int, advice: list[FitAdvice] | None = None
) -> FitReport:
    return FitReport(
        verdict=verdict,
        engine=FitEngine.LLAMA_CPP,
        summary="Fits on the GPU: 6.1 GiB of 23.6 GiB free.",
        context_length=8192,
        n_parallel=1,
        gpu_layers=gpu_layers,
        total_layers=37,
        devices=[],
        weights_bytes=1,
        kv_bytes=1,
        kv_bytes_per_token=1,
        compute_bytes=1,
        total_bytes=1,
        advice=advice or [],
    )


def test_the_launch_takes_the_estimates_context_and_layers_and_says_why() -> None:
    model = _model("a1", "/m/q.gguf")
    launch = choose_launch(model, EngineId.LLAMA_CPP, "q", _report(FitVerdict.FULL_GPU, 37))
    options = launch.request.options
    assert (options.model, options.ctx_size, options.n_gpu_layers) == ("/m/q.gguf", 8192, 37)
    assert options.served_name == "q" and launch.request.preset is None
    assert launch.why.startswith("llama.cpp, a 8192-token context, every layer on the GPU")
    assert "Fits on the GPU: 6.1 GiB" in launch.why

    partial = choose_launch(model, EngineId.LLAMA_CPP, "q", _report(FitVerdict.PARTIAL_OFFLOAD, 20))
    assert "20 of 37 layers on the GPU" in partial.why

    shrink = [FitAdvice(kind=AdviceKind.MAX_CONTEXT, text="use 4096", value=4096)]
    tight = choose_launch(
        model, EngineId.LLAMA_CPP, "q", _report(FitVerdict.DOES_NOT_FIT, 0, shrink)
    )
    assert tight.request.options.ctx_size == 4096
    assert "lowered to 4096" in tight.why

    unknown = choose_launch(model, EngineId.LLAMA_CPP, "q", None, "no header")
    assert unknown.request.options.ctx_size is None and "no header" in unknown.why

    vllm = choose_launch(
        _model("s", "/m/s", fmt=ModelFormat.SAFETENSORS),
        EngineId.VLLM,
        "s",
        _report(FitVerdict.FULL_GPU, 37),
    )
    assert vllm.request.options.max_model_len == 8192 and vllm.why.startswith("vLLM")
    ollama = choose_launch(_model("o", None, LibrarySource.OLLAMA), EngineId.OLLAMA, "o", None)
    assert ollama.request.options.model is None and "Ollama" in ollama.why


def test_aliases_are_checked_in_words() -> None:
    good = GatewaySettings(aliases={" claude-sonnet-4-5 ": "qwen3-coder-30b"}, default_model=" ")
    assert good.aliases == {"claude-sonnet-4-5": "qwen3-coder-30b"}
    assert good.default_model is None
    for aliases, words in (
        ({"a": "a"}, "points at itself"),
        ({"a": "b", "b": "c"}, "which is an alias itself"),
        ({"a": "b", "b": "a"}, "which is an alias itself"),
        ({"two words": "b"}, "spaces"),
        ({"": "b"}, "empty"),
    ):
        with pytest.raises(ValidationError, match=words):
            GatewaySettings(aliases=aliases)
    with pytest.raises(InvalidInputError, match="id of a model the gateway serves"):
        check_aliases({"tiny": "other"}, {}, {"tiny"})
    # One saved before that model appeared does not block other changes.
    check_aliases({"tiny": "other"}, {"tiny": "other"}, {"tiny"})


def test_a_table_keeps_its_ids_whole_and_leaves_out_what_does_not_fit() -> None:
    long_id = "Qwen3-Coder-30B-A3B-Instruct-UD-Q4_K_XL"
    columns = [
        Column("ID", [long_id], whole=True),
        Column("Name", ["Qwen/Qwen3-Coder-30B-A3B-Instruct-GGUF UD-Q4_K_XL"], drop=1),
        *(Column(f"C{i}", ["some value"], drop=i + 2) for i in range(8)),
    ]
    console = Console(width=80, record=True)
    console.print(fitted("Models", columns, 80))
    text = console.export_text()
    assert long_id in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "C7" not in text  # the least needed went first
    wide = Console(width=300, record=True)
    wide.print(fitted("Models", columns, 300))
    assert "C7" in wide.export_text()


def test_a_library_start_is_planned_when_it_starts() -> None:
    calls: list[str] = []

    async def plan() -> Launch:
        calls.append("planned")
        return choose_launch(_model("a", "/m/a.gguf"), EngineId.LLAMA_CPP, "a", None, "later")

    entry = Startable(
        id="a",
        engine=EngineId.LLAMA_CPP,
        model="/m/a.gguf",
        preset=None,
        names=frozenset({"a"}),
        plan=plan,
    )
    assert calls == []
    launch = asyncio.run(entry.launch())
    assert calls == ["planned"] and launch.request.options.served_name == "a"


class _Library:
    """The library as the gateway reads it: its last scan and a count of scans."""

    def __init__(self, models: list[LibraryModel]) -> None:
        self.models = models
        self.last: LibraryList | None = None
        self.generation = 0
        self.scans = 0

    async def scan(self) -> LibraryList:
        self.scans += 1
        self.generation += 1
        named = served_ids(self.models)
        self.last = LibraryList(
            models=[m.model_copy(update={"served_id": named[m.id]}) for m in self.models],
            places=[],
            scanned_at=datetime.now(UTC),
            scan_seconds=0.0,
        )
        return self.last


def test_the_library_is_read_from_its_last_scan_and_rebuilt_only_after_another() -> None:
    library = _Library([_model("a1", "/m/tiny.gguf")])
    source = LibraryStartables(lambda: library, lambda: None)
    assert source() == []  # never scanned: nothing yet, and no scan per call
    assert library.scans == 0
    assert asyncio.run(source.refresh())
    first = source()
    assert [s.id for s in first] == ["tiny"] and first[0].preset is None
    assert "a1" in first[0].names and "/m/tiny.gguf" in first[0].names
    for _ in range(100):
        assert source() is first  # the same list, not rebuilt per request
    assert library.scans == 1
    library.models.append(_model("b2", "/m/other.gguf"))
    asyncio.run(library.scan())
    assert [s.id for s in source()] == ["tiny", "other"]
    # Without the estimate, the start still says what it chose and why.
    launch = asyncio.run(source()[0].launch())
    assert launch.request.options.served_name == "tiny"
    assert "could not size" in launch.why


def test_aliases_are_listed_with_their_targets_engine_and_where_requests_go() -> None:
    listed = [
        Listed(GatewayModel(id="qwen", engine=EngineId.VLLM, state=ModelState.STARTABLE)),
        Listed(GatewayModel(id="tiny", engine=EngineId.LLAMA_CPP, state=ModelState.STARTABLE)),
    ]
    out = with_aliases(listed, {"claude-sonnet-4-5": "qwen", "gone": "nothing", "tiny": "qwen"})
    by_id = {entry.model.id: entry.model for entry in out}
    assert by_id["claude-sonnet-4-5"].alias_of == "qwen"
    assert by_id["claude-sonnet-4-5"].engine == EngineId.VLLM
    assert "gone" not in by_id  # its target is not here
    # An alias older than a model of its name takes its requests: listed in its place.
    assert by_id["tiny"].alias_of == "qwen" and len(out) == 3
