"""Benchmark prompts: random ones from a built-in word list, or the user's ShareGPT file."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from roundhouse.api.bench import Convention
from roundhouse.core.errors import InvalidInputError

# Common English words, most of them one token in every tokenizer we serve: a prompt of L
# words is close to L tokens without a tokenizer (no downloads).
_WORD_TEXT = """the of and to in is was for on are with as be at by this had not but from or have an
    they which one you were all her she there would their we him been has when who will more
    no if out so said what up its about into than them can only other new some could time
    these two may then do first any my now such like our over man me even most made after
    also did many before must through back years where much your way well down should
    because each just those people how too little state good very make world still own see
    men work long get here between both life being under never day same another know while
    last might us great old year off come since against go came right used take three
    place house water light small large river city music story paper garden window morning
    evening table market letter number answer course voice sound power field family table
    school friend mountain island forest road bridge train station winter summer spring
    autumn color green blue red yellow black white stone glass wood iron silver gold"""
WORDS = tuple(dict.fromkeys(_WORD_TEXT.split()))


class WorkloadError(InvalidInputError):
    """A prompts file that cannot be used; the message names the line and what is wrong."""

    title = "Unusable prompts file"


@dataclass(frozen=True)
class Prompt:
    text: str
    input_len: int
    output_len: int


def random_lengths(
    n: int, length: int, ratio: float, convention: Convention, rng: np.random.Generator
) -> list[int]:
    """Lengths around `length`: vLLM draws from [L(1-r), L(1+r)] (r = 0: exactly L); sglang
    from [L*r, L] (r = 0: uniform over 1..L)."""
    if convention is Convention.VLLM:
        low, high = max(1, math.floor(length * (1 - ratio))), math.ceil(length * (1 + ratio))
    else:
        low, high = max(1, int(length * ratio)), length
    return [int(v) for v in rng.integers(low, high + 1, size=n)]


def random_prompts(
    n: int,
    input_len: int,
    output_len: int,
    *,
    ratio: float = 0.0,
    seed: int = 0,
    convention: Convention = Convention.VLLM,
) -> list[Prompt]:
    """`n` prompts of about `input_len` tokens (approximated by words), seeded."""
    rng = np.random.default_rng(seed)
    inputs = random_lengths(n, input_len, ratio, convention, rng)
    outputs = random_lengths(n, output_len, ratio, convention, rng)
    prompts = []
    for i_len, o_len in zip(inputs, outputs, strict=True):
        picks = rng.integers(0, len(WORDS), size=i_len)
        prompts.append(Prompt(" ".join(WORDS[int(k)] for k in picks), i_len, o_len))
    return prompts


def _entries(text: str) -> list[tuple[int, object]]:
    """(line number, parsed value) for a JSON list or a JSONL text."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"The prompts file is not valid JSON: {exc}.") from exc
        return [(i + 1, item) for i, item in enumerate(items)]
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entries.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise WorkloadError(
                f"Line {number} of the prompts file is not JSON ({exc.msg}). Each line must "
                'be one object like {"conversations": [{"from": "human", "value": "..."}]}.'
            ) from exc
    return entries


def _turns(number: int, entry: object) -> list[dict[str, object]]:
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise WorkloadError(
            f"Entry {number} of the prompts file has no 'conversations' list (ShareGPT format: "
            '{"conversations": [{"from": "human", "value": "..."}, ...]}).'
        )
    return turns


def sharegpt_prompts(text: str, n: int, output_len: int | None = None) -> list[Prompt]:
    """The first `n` usable conversations of a ShareGPT file: the first human turn is the
    prompt, the reply's word count the output length unless `output_len` is given."""
    prompts: list[Prompt] = []
    for number, entry in _entries(text):
        turns = _turns(number, entry)
        human = next((t for t in turns if t.get("from") in ("human", "user")), None)
        if human is None or not isinstance(human.get("value"), str) or not human["value"]:
            raise WorkloadError(f"Entry {number} of the prompts file has no human turn text.")
        prompt = str(human["value"])
        reply = next((t for t in turns if t.get("from") in ("gpt", "assistant")), None)
        wanted = output_len
        if wanted is None:
            words = len(str(reply.get("value", "")).split()) if reply is not None else 0
            wanted = max(words, 1)
        prompts.append(Prompt(prompt, len(prompt.split()), wanted))
        if len(prompts) == n:
            break
    if not prompts:
        raise WorkloadError("The prompts file holds no conversations.")
    # Fewer conversations than requests: cycle through them, as a user would expect.
    return [prompts[i % len(prompts)] for i in range(n)]
