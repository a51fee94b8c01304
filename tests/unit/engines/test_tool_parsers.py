"""Tool-call and reasoning parsers: the table applied to real chat templates, the user's
overrides, and launch plans that never carry a flag twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundhouse.api.engines import DetectedEngine, EngineId, FoundBy, LaunchParams
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.engines.tool_parsers import (
    choose_parsers,
    load_table,
    read_chat_facts,
)
from roundhouse.core.errors import InvalidInputError
from tests.fixtures.chat_templates import MODELS, write_model
from tests.unit.engines.conftest import catalog

VLLM = EngineId.VLLM
SGLANG = EngineId.SGLANG

# family: (vLLM tool, vLLM reasoning, SGLang tool, SGLang reasoning), per the engines' docs.
EXPECTED = {
    "qwen3": ("hermes", "qwen3", "qwen25", "qwen3"),
    "qwen3-coder": ("qwen3_coder", None, "qwen3_coder", None),
    "qwq": ("hermes", "deepseek_r1", "qwen25", "deepseek-r1"),
    "qwen2.5": ("hermes", None, "qwen25", None),
    "llama3.1": ("llama3_json", None, "llama3", None),
    "mistral-nemo": ("mistral", None, "mistral", None),
    "r1-distill-qwen": (None, "deepseek_r1", None, "deepseek-r1"),
    "deepseek-v3.1": ("deepseek_v31", "deepseek_v3", "deepseekv31", "deepseek-v3"),
    "gpt-oss": ("openai", "openai_gptoss", "gpt-oss", "gpt-oss"),
    "glm-4.6": ("glm45", "glm45", "glm45", "glm45"),
    "kimi-k2": ("kimi_k2", None, "kimi_k2", None),
    "kimi-k2-thinking": ("kimi_k2", "kimi_k2", "kimi_k2", "kimi_k2"),
    "granite-3.3": ("granite", "granite", None, None),
    "hermes-3-llama": ("hermes", None, "qwen25", None),
}


def found(engine: EngineId) -> DetectedEngine:
    python = "/srv/env/bin/python"
    module = catalog().spec(engine).python_modules[0]
    return DetectedEngine(
        id=engine, found_by=FoundBy.PYTHON, python=python, module=module, where="test"
    )


def test_every_family_in_the_fixtures_is_expected() -> None:
    assert set(EXPECTED) == set(MODELS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_table_picks_each_familys_parsers_from_its_real_template(
    tmp_path: Path, name: str
) -> None:
    facts = read_chat_facts(str(write_model(tmp_path / name, name)))
    assert facts is not None
    vllm = choose_parsers(VLLM, facts)
    sglang = choose_parsers(SGLANG, facts)
    assert (vllm.tool, vllm.reasoning, sglang.tool, sglang.reasoning) == EXPECTED[name]
    assert vllm.family is not None
    assert any(vllm.family in note for note in vllm.notes)


def test_a_hub_repo_is_read_from_its_snapshot_in_the_engines_cache(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--Qwen--Qwen3-8B"
    write_model(repo / "snapshots" / "abc123", "qwen3")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    facts = read_chat_facts("Qwen/Qwen3-8B", str(tmp_path / "hub"))
    assert facts is not None
    assert facts.model_type == "qwen3"
    assert facts.where.endswith("abc123")
    # Not downloaded, or no cache given: nothing is read, nothing is guessed.
    assert read_chat_facts("Qwen/Qwen3-32B", str(tmp_path / "hub")) is None
    assert read_chat_facts("Qwen/Qwen3-8B", None) is None


def test_a_template_list_in_tokenizer_config_is_read(tmp_path: Path) -> None:
    folder = write_model(tmp_path / "m", "qwen2.5")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = [
        {"name": "default", "template": "{{ messages }}"},
        {"name": "tool_use", "template": config["chat_template"]},
    ]
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    assert choose_parsers(VLLM, read_chat_facts(str(folder))).tool == "hermes"


def test_an_unknown_model_gets_no_parser_and_says_how_to_choose(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "rwkv7"}')
    choice = choose_parsers(VLLM, read_chat_facts(str(folder)))
    assert (choice.tool, choice.reasoning) == (None, None)
    assert "tool_parser" in choice.notes[0]
    missing = choose_parsers(SGLANG, None)
    assert (missing.tool, missing.reasoning) == (None, None)
    assert "no config.json or chat template" in missing.notes[0]


def test_the_users_choice_wins_and_none_turns_a_parser_off(tmp_path: Path) -> None:
    facts = read_chat_facts(str(write_model(tmp_path / "q", "qwen3")))
    choice = choose_parsers(VLLM, facts, tool="qwen3_xml", reasoning="none")
    assert (choice.tool, choice.reasoning) == ("qwen3_xml", None)
    assert any("qwen3_xml (set in the instance's options)" in n for n in choice.notes)
    assert any("none (turned off" in n for n in choice.notes)
    with pytest.raises(InvalidInputError, match="not a tool-call parser name"):
        choose_parsers(VLLM, facts, tool="hermes --trust-remote-code")


def test_the_bundled_table_names_only_parsers_the_engines_register() -> None:
    # The engines' registries (vLLM tool_parsers/__init__.py and reasoning/__init__.py,
    # SGLang ToolCallParserEnum and ReasoningParser.DetectorMap), for the names used here.
    vllm_tools = {
        "openai", "qwen3_coder", "hermes", "glm45", "kimi_k2", "deepseek_v31",
        "deepseek_v3", "mistral", "llama4_pythonic", "llama3_json", "granite",
    }  # fmt: skip
    vllm_reasoning = {"openai_gptoss", "qwen3", "glm45", "kimi_k2", "deepseek_v3", "deepseek_r1"}
    vllm_reasoning |= {"granite"}
    sglang_tools = {
        "gpt-oss", "qwen3_coder", "qwen25", "glm45", "kimi_k2", "deepseekv31", "deepseekv3",
        "mistral", "pythonic", "llama3",
    }  # fmt: skip
    sglang_reasoning = {"gpt-oss", "qwen3", "glm45", "kimi_k2", "deepseek-v3", "deepseek-r1"}
    for rule in load_table().rules:
        assert rule.vllm_tool in vllm_tools | {None}, rule.family
        assert rule.vllm_reasoning in vllm_reasoning | {None}, rule.family
        assert rule.sglang_tool in sglang_tools | {None}, rule.family
        assert rule.sglang_reasoning in sglang_reasoning | {None}, rule.family


# -- launch plans -----------------------------------------------------------------------------


def test_vllm_starts_a_qwen3_folder_with_auto_tool_choice_and_both_parsers(
    tmp_path: Path,
) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    params = LaunchParams(model=folder, port=41100)
    plan = build_launch(catalog().spec(VLLM), found(VLLM), params)
    assert plan.argv[-5:] == (
        "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
        "--reasoning-parser", "qwen3",
    )  # fmt: skip
    assert any("qwen3" in note and folder in note for note in plan.notes)


def test_sglang_gets_its_own_parser_names_and_no_auto_tool_choice(tmp_path: Path) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    plan = build_launch(catalog().spec(SGLANG), found(SGLANG), LaunchParams(model=folder, port=1))
    assert "--enable-auto-tool-choice" not in plan.argv
    argv = list(plan.argv)
    assert argv[argv.index("--tool-call-parser") + 1] == "qwen25"
    assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"


def test_a_hub_repo_in_the_daemons_cache_gets_its_parsers(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--openai--gpt-oss-20b"
    write_model(repo / "snapshots" / "c0ffee", "gpt-oss")
    params = LaunchParams(model="openai/gpt-oss-20b", port=41101)
    plan = build_launch(
        catalog().spec(VLLM), found(VLLM), params, hf_hub_cache=str(tmp_path / "hub")
    )
    argv = list(plan.argv)
    assert argv[argv.index("--tool-call-parser") + 1] == "openai"
    assert argv[argv.index("--reasoning-parser") + 1] == "openai_gptoss"


@pytest.mark.parametrize(
    "extra",
    [
        ("--tool-call-parser", "qwen3_xml"),
        ("--tool-call-parser=qwen3_xml",),
        ("--tool_call_parser", "qwen3_xml"),
        ("--tool-call", "qwen3_xml"),  # argparse reads a prefix as the flag
    ],
)
def test_a_parser_in_the_extra_arguments_is_the_only_one(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    params = LaunchParams(
        model=folder, port=41102, extra_args=("--enable-auto-tool-choice", *extra)
    )
    plan = build_launch(catalog().spec(VLLM), found(VLLM), params)
    argv = list(plan.argv)
    assert argv.count("--enable-auto-tool-choice") == 1
    assert sum(a.startswith(("--tool-call", "--tool_call")) for a in argv) == 1
    assert "hermes" not in argv
    assert argv[argv.index("--reasoning-parser") + 1] == "qwen3"
    assert any("extra arguments" in note for note in plan.notes)


def test_a_parser_set_twice_is_refused_in_words(tmp_path: Path) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    params = LaunchParams(
        model=folder,
        port=41103,
        reasoning_parser="deepseek_r1",
        extra_args=("--reasoning-parser", "qwen3"),
    )
    with pytest.raises(InvalidInputError, match="set it once"):
        build_launch(catalog().spec(SGLANG), found(SGLANG), params)


def test_options_turn_parsers_off_and_pick_others(tmp_path: Path) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    off = LaunchParams(model=folder, port=41104, tool_parser="none", reasoning_parser="none")
    plan = build_launch(catalog().spec(VLLM), found(VLLM), off)
    assert not {"--enable-auto-tool-choice", "--tool-call-parser", "--reasoning-parser"} & set(
        plan.argv
    )
    other = LaunchParams(model=folder, port=41104, tool_parser="qwen3_xml")
    argv = list(build_launch(catalog().spec(VLLM), found(VLLM), other).argv)
    assert argv[argv.index("--tool-call-parser") + 1] == "qwen3_xml"


def test_llama_server_gets_jinja_and_the_users_reasoning_format() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    detected = DetectedEngine(
        id=EngineId.LLAMA_CPP, found_by=FoundBy.PATH, path="/bin/llama-server", where="t"
    )
    plain = build_launch(spec, detected, LaunchParams(model="/m/x.gguf", port=41105))
    assert "--jinja" in plain.argv
    assert "--reasoning-format" not in plain.argv  # the build's default: reasoning_content
    assert "reasoning_content" in plain.notes[0]
    chosen = LaunchParams(model="/m/x.gguf", port=41105, reasoning_parser="none")
    argv = list(build_launch(spec, detected, chosen).argv)
    assert argv[argv.index("--reasoning-format") + 1] == "none"
    with pytest.raises(InvalidInputError, match="reasoning format"):
        build_launch(
            spec, detected, LaunchParams(model="/m/x.gguf", port=1, reasoning_parser="qwen3")
        )
    with pytest.raises(InvalidInputError, match="no parser to choose"):
        build_launch(spec, detected, LaunchParams(model="/m/x.gguf", port=1, tool_parser="hermes"))
    twice = LaunchParams(
        model="/m/x.gguf",
        port=1,
        reasoning_parser="none",
        extra_args=("--reasoning-format", "deepseek"),
    )
    with pytest.raises(InvalidInputError, match="set it once"):
        build_launch(spec, detected, twice)


def test_vllm_before_0_9_also_gets_enable_reasoning(tmp_path: Path) -> None:
    folder = str(write_model(tmp_path / "Qwen3-8B", "qwen3"))
    old = found(VLLM).model_copy(update={"version": "0.8.5"})
    argv = build_launch(catalog().spec(VLLM), old, LaunchParams(model=folder, port=1)).argv
    assert argv[-3:] == ("--reasoning-parser", "qwen3", "--enable-reasoning")
    new = found(VLLM).model_copy(update={"version": "0.11.0"})
    argv = build_launch(catalog().spec(VLLM), new, LaunchParams(model=folder, port=1)).argv
    assert "--enable-reasoning" not in argv
