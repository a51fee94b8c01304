"""Quantization names from GGUF file names, and a repository's files grouped into choices."""

from __future__ import annotations

import fnmatch

import pytest

from roundhouse.api.hub import HubFile, HubModelKind
from roundhouse.core.models.hub.config_facts import config_facts
from roundhouse.core.models.hub.grouping import group_files
from roundhouse.core.models.hub.kinds import detect_kinds, parameter_total
from roundhouse.core.models.hub.quants import group_gguf_files, parse_quant, split_part


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Qwen3-8B-Q4_K_M.gguf", "Q4_K_M"),
        ("qwen2.5-7b-instruct-q4_k_m.gguf", "Q4_K_M"),
        ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"),
        ("DeepSeek-R1-UD-IQ1_S-00001-of-00003.gguf", "UD-IQ1_S"),
        ("gemma-3-27b-it-IQ2_XXS.gguf", "IQ2_XXS"),
        ("model.IQ4_NL.gguf", "IQ4_NL"),
        ("Llama-3.2-1B-Instruct-f16.gguf", "F16"),
        ("Llama-3.2-1B-Instruct-fp16.gguf", "F16"),
        ("x-BF16-00001-of-00002.gguf", "BF16"),
        ("BF16/Qwen3-235B-A22B-00001-of-00010.gguf", "BF16"),
        ("Q4_K_M/Qwen3-235B-A22B-Q4_K_M-00002-of-00003.gguf", "Q4_K_M"),
        ("gpt-oss-20b-MXFP4.gguf", "MXFP4"),
        ("Meta-Llama-3-8B-Instruct.Q4_0_4_4.gguf", "Q4_0_4_4"),
        ("Mistral-7B.i1-Q4_K_S.gguf", "Q4_K_S"),
        ("bitnet-b1.58-TQ1_0.gguf", "TQ1_0"),
        ("Qwen2.5-Coder-32B-Instruct-Q6_K_L.gguf", "Q6_K_L"),
        ("phi-4-Q8_0.gguf", "Q8_0"),
        ("mmproj-model-f16.gguf", "F16"),
        ("llama-7b.gguf", None),
        ("Qwen3-8B.gguf", None),
        ("Qwen2-VL.gguf", None),
    ],
)
def test_quant_names(name: str, quant: str | None) -> None:
    assert parse_quant(name) == quant


def test_split_parts() -> None:
    part = split_part("dir/x-Q8_0-00002-of-00003.gguf")
    assert part is not None
    assert (part.base, part.part, part.total) == ("dir/x-Q8_0", 2, 3)
    assert split_part("x-Q8_0.gguf") is None
    assert split_part("x-00000-of-00003.gguf") is None  # parts count from 1
    assert split_part("x-00004-of-00003.gguf") is None


def files(*pairs: tuple[str, int]) -> list[HubFile]:
    return [HubFile(path=p, size=s) for p, s in pairs]


def test_gguf_groups_sum_shards_and_set_projectors_apart() -> None:
    listing = files(
        ("README.md", 10),
        ("Qwen3-8B-Q8_0.gguf", 800),
        ("Qwen3-8B-Q4_K_M.gguf", 500),
        ("BF16/Qwen3-8B-BF16-00002-of-00002.gguf", 700),
        ("BF16/Qwen3-8B-BF16-00001-of-00002.gguf", 900),
        ("mmproj-F16.gguf", 60),
    )
    groups = group_gguf_files(listing)
    assert [(g.name, g.size, g.shards, g.projector) for g in groups] == [
        ("Q4_K_M", 500, 1, False),
        ("Q8_0", 800, 1, False),
        ("BF16", 1600, 2, False),
        ("F16", 60, 1, True),
    ]
    split = groups[2]
    assert split.first.path == "BF16/Qwen3-8B-BF16-00001-of-00002.gguf"
    assert split.complete
    paths = [f.path for f in listing]
    assert sorted(fnmatch.filter(paths, split.pattern)) == sorted(f.path for f in split.files)
    assert fnmatch.filter(paths, groups[0].pattern) == ["Qwen3-8B-Q4_K_M.gguf"]


def test_missing_shard_makes_a_group_incomplete() -> None:
    (group,) = group_gguf_files(files(("m-Q2_K-00001-of-00003.gguf", 5)))
    assert group.shards == 3
    assert not group.complete


def test_glob_special_characters_in_names_are_escaped() -> None:
    (group,) = group_gguf_files(files(("odd [v2]*-Q4_0.gguf", 5)))
    assert fnmatch.filter(["odd [v2]*-Q4_0.gguf", "odd v-Q4_0.gguf"], group.pattern) == [
        "odd [v2]*-Q4_0.gguf"
    ]


def test_mlx_repo_is_one_group_with_its_companion_files() -> None:
    listing = files(
        ("config.json", 1),
        ("model-00001-of-00002.safetensors", 300),
        ("model-00002-of-00002.safetensors", 200),
        ("model.safetensors.index.json", 2),
        ("tokenizer.json", 3),
        ("README.md", 4),
        (".gitattributes", 1),
    )
    config = {"model_type": "qwen3", "quantization": {"group_size": 64, "bits": 4}}
    groups, projectors = group_files(listing, [HubModelKind.MLX], config)
    assert projectors == []
    (group,) = groups
    assert (group.name, group.kind, group.quantization, group.shards) == (
        "MLX 4bit",
        HubModelKind.MLX,
        "4bit",
        2,
    )
    assert [f.path for f in group.files] == [
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "tokenizer.json",
    ]
    assert group.size == 506


def test_safetensors_and_gguf_in_one_repo() -> None:
    listing = files(("config.json", 1), ("model.safetensors", 900), ("m-Q4_0.gguf", 300))
    kinds = [HubModelKind.GGUF, HubModelKind.SAFETENSORS]
    groups, _ = group_files(listing, kinds, {"torch_dtype": "bfloat16"})
    assert [(g.name, g.kind) for g in groups] == [
        ("Q4_0", HubModelKind.GGUF),
        ("safetensors BF16", HubModelKind.SAFETENSORS),
    ]


def test_config_facts() -> None:
    mlx = config_facts({"model_type": "llama", "quantization": {"bits": 8, "group_size": 32}})
    assert (mlx.quantization, mlx.mlx) == ("8bit", True)
    awq = config_facts({"quantization_config": {"quant_method": "awq", "bits": 4}})
    assert (awq.quantization, awq.mlx) == ("AWQ 4-bit", False)
    fp8 = config_facts({"quantization_config": {"quant_method": "fp8"}})
    assert fp8.quantization == "FP8"
    vlm = config_facts({"model_type": "gemma3", "text_config": {"max_position_embeddings": 131072}})
    assert (vlm.architecture, vlm.context_length) == ("gemma3", 131072)
    assert config_facts({"dtype": "float16"}).quantization == "F16"
    assert config_facts({"max_position_embeddings": True}).context_length is None
    assert config_facts(None).architecture is None


def test_kinds_from_tags_library_and_files() -> None:
    assert detect_kinds(["gguf", "text-generation"]) == [HubModelKind.GGUF]
    assert detect_kinds(["safetensors", "mlx"]) == [HubModelKind.MLX]
    assert detect_kinds([], "mlx") == [HubModelKind.MLX]
    assert detect_kinds(["safetensors"]) == [HubModelKind.SAFETENSORS]
    assert detect_kinds([], None, ["a.gguf", "b.safetensors"]) == [
        HubModelKind.GGUF,
        HubModelKind.SAFETENSORS,
    ]
    assert detect_kinds(["pytorch"]) == []


def test_parameter_total_takes_the_first_positive_integer() -> None:
    assert parameter_total(None, {"total": 7}) == 7
    assert parameter_total({"total": 3}, {"total": 7}) == 3
    assert parameter_total({"total": True}, {"total": "9"}) is None
