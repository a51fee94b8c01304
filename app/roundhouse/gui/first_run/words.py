"""The guide's words: engine states, a model's fit and state, costs (Qt-free, unit-tested)."""

from __future__ import annotations

from roundhouse.api.fit import FitVerdict
from roundhouse.api.starters import (
    EngineChoice,
    EngineSetupState,
    OptionKind,
    StarterList,
    StarterOption,
)
from roundhouse.base.units import format_bytes

ENGINE_STATES = {
    EngineSetupState.READY: "installed",
    EngineSetupState.INSTALL: "Roundhouse installs it",
    EngineSetupState.EXTERNAL: "needs its own installer",
}
VERDICTS = {
    FitVerdict.FULL_GPU: "fits on the GPU",
    FitVerdict.PARTIAL_OFFLOAD: "partly on the GPU",
    FitVerdict.CPU_ONLY: "runs on the CPU",
    FitVerdict.DOES_NOT_FIT: "does not fit",
}
SUGGESTED_PROMPT = "Hello! In one sentence, what can you help me with?"


def engine_label(choice: EngineChoice, recommended: bool) -> str:
    """'llama.cpp (CUDA) — installed (recommended)'."""
    tail = " (recommended)" if recommended else ""
    return f"{choice.title} — {ENGINE_STATES[choice.state]}{tail}"


def engine_cost(choice: EngineChoice) -> str:
    """What installing it costs, in one sentence; '' when nothing is to be installed."""
    if choice.state == EngineSetupState.READY or choice.cost is None:
        return ""
    note = f" {choice.cost.note}" if choice.cost.note else ""
    return f"Roughly {choice.cost.in_words()}.{note}"


def fit_text(option: StarterOption) -> str:
    """'runs on the CPU', 'fits on the GPU (tight)' or '—' when not estimated."""
    if option.verdict is None:
        return "—"
    words = VERDICTS[option.verdict]
    if not option.comfortable and option.verdict != FitVerdict.DOES_NOT_FIT:
        words += " (slow or tight)"
    return words


def state_text(option: StarterOption, online: bool) -> str:
    """'downloaded', 'in your library', the download's cost, or why it cannot be used."""
    if option.problem:
        return f"unavailable: {option.problem}"
    if option.downloaded:
        return "downloaded" if option.kind == OptionKind.STARTER else "in your library"
    if not online:
        return "needs a download (offline now)"
    if option.download is not None:
        return f"download {format_bytes(option.download.download_bytes)}"
    return "to download"


def shown_options(starters: StarterList) -> list[StarterOption]:
    """Every option, those already on this machine first (each part in the list's order);
    offline, the starters still show what each would take, marked as needing a download."""
    return sorted(starters.options, key=lambda o: not o.downloaded)


def download_words(option: StarterOption, online: bool = True) -> str:
    """What the download step will do, before it starts."""
    if option.downloaded:
        return f"{option.title} is on this machine already: nothing to download."
    where = "through Ollama" if option.ollama_tag else "from Hugging Face"
    if not online:
        size = format_bytes(option.size_bytes)
        return (
            f"{option.title} ({size}) needs a download {where}, and there is no connection "
            "now. Choose a model on this machine, import a model file, or come back online."
        )
    if option.download is None:
        return f"Downloads {option.title}."
    return (
        f"Downloads {option.title} {where}: {option.download.in_words()}. It goes on in the "
        "background if you close the guide."
    )
