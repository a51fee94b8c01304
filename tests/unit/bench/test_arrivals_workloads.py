"""Arrivals (seeded, rescaled as vLLM does) and workloads (random prompts, ShareGPT files)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from roundhouse.api.bench import Convention
from roundhouse.core.bench.arrivals import poisson_offsets
from roundhouse.core.bench.workloads import (
    WORDS,
    WorkloadError,
    random_prompts,
    sharegpt_prompts,
)


def test_vllm_arrivals_are_seeded_and_the_last_lands_at_n_over_rate() -> None:
    offsets = poisson_offsets(200, 8.0, seed=7)
    assert offsets == poisson_offsets(200, 8.0, seed=7)
    assert offsets != poisson_offsets(200, 8.0, seed=8)
    assert offsets[-1] == pytest.approx(200 / 8.0, abs=1e-12)
    assert all(b >= a for a, b in itertools.pairwise(offsets))
    assert offsets[0] > 0


def test_sglang_arrivals_keep_the_raw_gaps_from_zero() -> None:
    offsets = poisson_offsets(2000, 10.0, seed=3, convention=Convention.SGLANG)
    assert offsets[0] == 0.0
    gaps = np.diff(offsets)
    assert gaps.mean() == pytest.approx(0.1, rel=0.1)
    assert offsets[-1] != pytest.approx(200.0, abs=1e-6)


def test_no_rate_sends_everything_at_once() -> None:
    assert poisson_offsets(5, None, seed=0) == [0.0] * 5


def test_random_prompts_vllm_fixed_and_ranged_lengths() -> None:
    fixed = random_prompts(50, 32, 16, seed=1)
    assert {p.input_len for p in fixed} == {32} and {p.output_len for p in fixed} == {16}
    assert all(len(p.text.split()) == 32 for p in fixed)
    assert all(w in WORDS for w in fixed[0].text.split())
    ranged = random_prompts(400, 100, 100, ratio=0.5, seed=1)
    lengths = {p.input_len for p in ranged}
    assert min(lengths) >= 50 and max(lengths) <= 150 and len(lengths) > 50
    assert random_prompts(3, 8, 4, seed=2) == random_prompts(3, 8, 4, seed=2)


def test_random_prompts_sglang_ratio_zero_is_uniform_from_one() -> None:
    prompts = random_prompts(500, 20, 20, seed=1, convention=Convention.SGLANG)
    lengths = {p.input_len for p in prompts}
    assert min(lengths) == 1 and max(lengths) == 20


def _conv(human: str, gpt: str) -> dict[str, object]:
    return {"conversations": [{"from": "human", "value": human}, {"from": "gpt", "value": gpt}]}


def test_sharegpt_jsonl_and_json_list() -> None:
    lines = "\n".join(json.dumps(_conv(f"question {i}", "a b c")) for i in range(3))
    prompts = sharegpt_prompts(lines, 5)
    assert [p.text for p in prompts] == [f"question {i % 3}" for i in range(5)]
    assert prompts[0].output_len == 3 and prompts[0].input_len == 2
    listed = sharegpt_prompts(json.dumps([_conv("hi there", "x")]), 1, output_len=9)
    assert listed[0].output_len == 9


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"conversations": []}\nnot json', "Line 2"),
        ('{"prompt": "x"}', "no 'conversations' list"),
        ('{"conversations": [{"from": "gpt", "value": "x"}]}', "no human turn"),
        ("[1, 2", "not valid JSON"),
        ("\n\n", "holds no conversations"),
    ],
)
def test_bad_prompt_files_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(WorkloadError) as caught:
        sharegpt_prompts(text, 3)
    assert words in caught.value.detail
