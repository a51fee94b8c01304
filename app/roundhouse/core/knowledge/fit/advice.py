"""Advice that makes a model fit (better): each one is checked by estimating again.

"Better" is a better verdict (full GPU > partial offload > CPU only > does not fit) or
more layers on the GPU; the machine's best is full GPU, or CPU only where no GPU is
used. Contexts are advised in multiples of 1024 tokens and never below MIN_CONTEXT
(2048): less is too short for most chats (llama.cpp's own --fit stops at 4096).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from roundhouse.api.fit import (
    UNQUANTIZED_CACHE_TYPES,
    AdviceKind,
    CacheType,
    FitAdvice,
    FitEngine,
    FitOptions,
    FitVerdict,
)
from roundhouse.core.knowledge.fit.devices import Budget
from roundhouse.core.knowledge.fit.dispatch import evaluate
from roundhouse.core.knowledge.fit.memory_advice import memory_advice
from roundhouse.core.knowledge.fit.moe import moe_advice
from roundhouse.core.knowledge.fit.outcome import Outcome
from roundhouse.core.knowledge.fit.quants import ladder, smaller_shape, weight_bpw
from roundhouse.core.knowledge.shape import ModelShape

MIN_CONTEXT = 2048
STEP = 1024
_ORDER = {
    FitVerdict.DOES_NOT_FIT: 0,
    FitVerdict.CPU_ONLY: 1,
    FitVerdict.PARTIAL_OFFLOAD: 2,
    FitVerdict.FULL_GPU: 3,
}
_GGUF = (FitEngine.LLAMA_CPP, FitEngine.OLLAMA)


class Again(Protocol):
    """The estimate again, with one thing changed."""

    def __call__(
        self, opts: FitOptions = ..., at: int = ..., model: ModelShape = ...
    ) -> Outcome: ...


def rank(outcome: Outcome) -> tuple[int, int]:
    """Order of preference: the verdict, then (when it runs) the layers on the GPU."""
    return _ORDER[outcome.verdict], outcome.gpu_layers if outcome.fits else 0


def where(outcome: Outcome) -> str:
    """How it fits, as words after "fits"."""
    if outcome.verdict == FitVerdict.FULL_GPU:
        return "fully on the GPU"
    if outcome.verdict == FitVerdict.PARTIAL_OFFLOAD:
        return f"with {outcome.gpu_layers} of {outcome.total_layers} layers on the GPU"
    return "in RAM, on the CPU"


def advise(
    shape: ModelShape,
    budget: Budget,
    options: FitOptions,
    engine: FitEngine,
    ctx: int,
    now: Outcome,
) -> list[FitAdvice]:
    def again(opts: FitOptions = options, at: int = ctx, model: ModelShape = shape) -> Outcome:
        return evaluate(model, budget, opts, engine, at)

    best = FitVerdict.FULL_GPU if budget.gpus else FitVerdict.CPU_ONLY
    advice: list[FitAdvice] = []
    if engine == FitEngine.LLAMA_CPP and (now.verdict != best or options.n_cpu_moe):
        # First: for a mixture of experts it beats every other way to fit (ADR 48).
        advice.extend(moe_advice(shape, budget, options, ctx))
    if now.verdict == FitVerdict.PARTIAL_OFFLOAD and options.gpu_layers is None:
        n, top = now.gpu_layers, now.total_layers
        text = f"Put {n} of {top} layers on the GPU (-ngl {n}); the other {top - n} run on "
        text += "the CPU, which is slower."
        advice.append(FitAdvice(kind=AdviceKind.OFFLOAD_LAYERS, text=text, value=n))
    if options.gpu_layers is not None and now.verdict != best and engine in _GGUF:
        auto = again(options.model_copy(update={"gpu_layers": None}))
        if rank(auto) > rank(now):
            n = auto.gpu_layers
            text = f"Use -ngl {n} (or leave it unset): it fits {where(auto)}."
            advice.append(FitAdvice(kind=AdviceKind.OFFLOAD_LAYERS, text=text, value=n))
    advice.extend(_context_advice(again, now, ctx, shape, best))
    if now.verdict != best:
        advice.extend(_cache_advice(again, now, options, engine))
        single = options.model_copy(update={"n_parallel": 1})
        if options.n_parallel > 1 and rank(tried := again(single)) > rank(now):
            text = f"Serve one request at a time (parallel 1): it fits {where(tried)}."
            advice.append(FitAdvice(kind=AdviceKind.FEWER_PARALLEL, text=text, value=1))
        advice.extend(_quant_advice(again, now, shape, best))
    if now.verdict == FitVerdict.DOES_NOT_FIT:
        advice.extend(memory_advice(now, budget))
    return advice


def _context_advice(
    again: Again, now: Outcome, ctx: int, shape: ModelShape, best: FitVerdict
) -> list[FitAdvice]:
    if now.verdict == best:
        # How far the context could grow and still fit as well, up to the trained one.
        top = max(shape.context_length, ctx) // STEP
        most = _largest(lambda k: again(at=k * STEP).verdict == best, ctx // STEP, top)
        if most is None or most * STEP <= ctx:
            return []
        text = f"A context of up to {most * STEP:,} tokens would still fit {where(now)}."
        return [FitAdvice(kind=AdviceKind.MAX_CONTEXT, text=text, value=most * STEP)]
    low, high = MIN_CONTEXT // STEP, (ctx - 1) // STEP
    goals = [best] if now.fits else [best, None]
    for goal in goals:

        def good(k: int, goal: FitVerdict | None = goal) -> bool:
            verdict = again(at=k * STEP).verdict
            return verdict == goal if goal else verdict != FitVerdict.DOES_NOT_FIT

        most = _largest(good, low, high)
        if most is not None:
            tried = again(at=most * STEP)
            text = f"Fits {where(tried)} with a context of up to {most * STEP:,} tokens."
            return [FitAdvice(kind=AdviceKind.MAX_CONTEXT, text=text, value=most * STEP)]
    return []


def _largest(good: Callable[[int], bool], low: int, high: int) -> int | None:
    """The largest k in [low, high] with good(k), for good true up to some k (or never)."""
    if high < low or not good(low):
        return None
    while low < high:
        mid = (low + high + 1) // 2
        if good(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _cache_advice(
    again: Again, now: Outcome, options: FitOptions, engine: FitEngine
) -> list[FitAdvice]:
    if engine == FitEngine.MLX or options.cache_type_k not in UNQUANTIZED_CACHE_TYPES:
        return []
    advice: list[FitAdvice] = []
    for kind, cache in ((AdviceKind.KV_Q8_0, CacheType.Q8_0), (AdviceKind.KV_Q4_0, CacheType.Q4_0)):
        update = {"cache_type_k": cache, "cache_type_v": cache, "flash_attention": True}
        tried = again(options.model_copy(update=update))
        if rank(tried) <= rank(now):
            continue
        if engine in _GGUF:
            how = f"-ctk {cache} -ctv {cache}, flash attention on"
        else:
            how = "--kv-cache-dtype fp8"
        text = f"Fits {where(tried)} with the KV cache in {cache} ({how})."
        advice.append(FitAdvice(kind=kind, text=text, value=cache.value))
        if tried.verdict == FitVerdict.FULL_GPU or engine not in _GGUF:
            break  # q4_0 costs quality: offered only where q8_0 is not enough
    return advice


def _quant_advice(
    again: Again, now: Outcome, shape: ModelShape, best: FitVerdict
) -> list[FitAdvice]:
    """The largest smaller quantization that reaches the best verdict (or fits at all)."""
    bpw = weight_bpw(shape)
    if bpw is None:
        return []
    fallback: FitAdvice | None = None
    for name, bits in ladder(shape.format):
        if bits >= bpw * 0.97:
            continue
        tried = again(model=smaller_shape(shape, bits / bpw))
        if rank(tried) <= rank(now):
            continue
        text = f"A {name} version (about {bits:.1f} bits per weight) would fit {where(tried)}."
        advice = FitAdvice(kind=AdviceKind.SMALLER_QUANT, text=text, value=name)
        if tried.verdict == best:
            return [advice]
        if fallback is None and now.verdict == FitVerdict.DOES_NOT_FIT:
            fallback = advice
    return [fallback] if fallback else []
