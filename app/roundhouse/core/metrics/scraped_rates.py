"""vLLM's and SGLang's own tokens/s, from the histograms of two consecutive /metrics scrapes."""

from __future__ import annotations

from dataclasses import dataclass

# Seconds per output token, one histogram per engine version; the first one both scrapes
# carry is read. vLLM's per-request histogram comes first: it divides each reply's decode
# time by its tokens, so speculative decoding (several tokens a step) counts right, where
# its inter-token histogram records one interval per step. SGLang's inter-token histogram
# counts every token of a step (count = tokens, sum = seconds).
OUTPUT_TIME = (
    "vllm:request_time_per_output_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",  # older vLLM
    "sglang:inter_token_latency_seconds",
    "sglang:time_per_output_token_seconds",  # older SGLang
)
# Time spent in prefill per request; SGLang has none, so its prompt rate stays unknown.
PREFILL_TIME = "vllm:request_prefill_time_seconds"
# Prompt tokens: the per-request histogram is observed together with the prefill time
# (when a request ends), the counter as the prefill runs; the first keeps them in step.
PROMPT_TOKENS = ("vllm:request_prompt_tokens_sum", "vllm:prompt_tokens_total")

NAMES: tuple[str, ...] = (
    *(f"{base}{part}" for base in (*OUTPUT_TIME, PREFILL_TIME) for part in ("_sum", "_count")),
    *PROMPT_TOKENS,
)
_WANTED = frozenset(NAMES)


@dataclass(frozen=True)
class Interval:
    """What the engine measured between two scrapes; None: nothing to measure it by."""

    output_tps: float | None = None
    prompt_tps: float | None = None
    reset: bool = False


def interval_rates(before: dict[str, float], after: dict[str, float]) -> Interval:
    """Generation tokens/s per request (observations / seconds of the seconds-per-token
    histogram) and prompt tokens/s (prompt tokens / prefill seconds) between two scrapes.
    Label sets are already summed by the scrape. A counter that went down means the engine
    restarted: `reset`, and no figure from this interval."""
    shared = [n for n in NAMES if n in before and n in after]
    if any(after[n] < before[n] for n in shared):
        return Interval(reset=True)
    return Interval(_output_rate(before, after), _prompt_rate(before, after))


def _delta(before: dict[str, float], after: dict[str, float], name: str) -> float | None:
    if name not in before or name not in after:
        return None
    return after[name] - before[name]


def _output_rate(before: dict[str, float], after: dict[str, float]) -> float | None:
    for base in OUTPUT_TIME:
        count = _delta(before, after, base + "_count")
        seconds = _delta(before, after, base + "_sum")
        if count is None or seconds is None:
            continue
        # No observation in the interval: idle, no new figure.
        return count / seconds if count > 0 and seconds > 0 else None
    return None


def _prompt_rate(before: dict[str, float], after: dict[str, float]) -> float | None:
    prefills = _delta(before, after, PREFILL_TIME + "_count")
    seconds = _delta(before, after, PREFILL_TIME + "_sum")
    if not prefills or not seconds or seconds <= 0:
        return None
    for name in PROMPT_TOKENS:
        tokens = _delta(before, after, name)
        if tokens is not None:
            return tokens / seconds if tokens > 0 else None
    return None


class ScrapedRates:
    """Per instance: the last scrape's histogram figures, and the last rates they gave.

    An idle interval keeps the last rates, as the median of recent requests does for
    llama.cpp; a restarted engine (counters gone down) starts over with none."""

    def __init__(self) -> None:
        self._base: dict[str, dict[str, float]] = {}
        self._rates: dict[str, tuple[float | None, float | None]] = {}

    def get(self, instance_id: str) -> tuple[float | None, float | None]:
        """(prompt, generation) tokens/s; None where not measured yet."""
        return self._rates.get(instance_id, (None, None))

    def update(self, instance_id: str, figures: dict[str, float]) -> None:
        mine = {n: v for n, v in figures.items() if n in _WANTED}
        before = self._base.get(instance_id)
        self._base[instance_id] = mine
        if before is None or not mine:
            return
        interval = interval_rates(before, mine)
        if interval.reset:
            self._rates.pop(instance_id, None)
            return
        prompt, output = self.get(instance_id)
        if interval.prompt_tps is not None:
            prompt = interval.prompt_tps
        if interval.output_tps is not None:
            output = interval.output_tps
        if prompt is not None or output is not None:
            self._rates[instance_id] = (prompt, output)

    def lost(self, instance_id: str) -> None:
        """The engine did not answer: it may come back restarted, with counters from zero
        that could already have passed the old ones; the next scrape is a new baseline."""
        self._base.pop(instance_id, None)

    def forget_except(self, present: set[str]) -> None:
        for store in (self._base, self._rates):
            for gone in store.keys() - present:
                del store[gone]
