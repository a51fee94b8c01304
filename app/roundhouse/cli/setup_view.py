"""How `roundhouse setup` shows the machine, the engines and the starter models."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roundhouse.api.fit import FitVerdict
from roundhouse.api.starters import (
    EngineChoice,
    EngineSetupState,
    SetupGuide,
    StarterList,
    StarterOption,
)
from roundhouse.base.units import format_bytes

_STATES = {
    EngineSetupState.READY: ("installed", "green"),
    EngineSetupState.INSTALL: ("Roundhouse installs it", "yellow"),
    EngineSetupState.EXTERNAL: ("needs its own installer", "yellow"),
}
_VERDICTS = {
    FitVerdict.FULL_GPU: "on the GPU",
    FitVerdict.PARTIAL_OFFLOAD: "partly on the GPU",
    FitVerdict.CPU_ONLY: "on the CPU",
    FitVerdict.DOES_NOT_FIT: "does not fit",
}


def step_title(number: int, title: str) -> Text:
    return Text.assemble(("\n", ""), (f"Step {number} of 4 · ", "dim"), (title, "bold"))


def guide_view(guide: SetupGuide) -> RenderableType:
    """The machine in one line, then the engines, best first."""
    table = Table(box=None, pad_edge=False, show_header=True)
    for column in ("", "Engine", "State", "Why"):
        table.add_column(column, overflow="fold")
    for choice in guide.engines:
        words, style = _STATES[choice.state]
        mark = "→" if choice.engine == guide.recommended else ""
        table.add_row(mark, choice.title, Text(words, style), Text(choice.reason))
    free = (
        f"{format_bytes(guide.disk_free_bytes)} free for models"
        if guide.disk_free_bytes is not None
        else ""
    )
    lines: list[RenderableType] = [Text(guide.hardware)]
    if free:
        lines.append(Text(free, "dim"))
    return Group(*lines, Text(""), table)


def engine_view(choice: EngineChoice) -> RenderableType:
    """What the engine step does: nothing, an install (with its cost), or the user's part."""
    mark = "[green]✓[/] " if choice.state == EngineSetupState.READY else ""
    lines: list[RenderableType] = [
        Text.from_markup(mark) + Text(f"{choice.title}: {choice.detail}")
    ]
    if choice.cost is not None and choice.state != EngineSetupState.READY:
        lines.append(Text(f"Costs {choice.cost.in_words()}.", "dim"))
        if choice.cost.note:
            lines.append(Text(choice.cost.note, "dim"))
    if choice.install_url and choice.state == EngineSetupState.EXTERNAL:
        lines.append(Text(f"Get it from {choice.install_url}"))
    return Group(*lines)


def option_state(option: StarterOption, online: bool = True) -> str:
    if option.problem:
        return f"unavailable: {option.problem}"
    if option.downloaded:
        return "downloaded"
    if not online:
        return "not on this machine (needs the Hub)"
    return option.download.in_words() if option.download else "to download"


def starters_view(starters: StarterList) -> RenderableType:
    """The options, numbered for the prompt, the recommended one marked, and why."""
    table = Table(box=None, pad_edge=False)
    for column in ("#", "", "Model", "Size", "Fit", "State"):
        table.add_column(column, overflow="fold", justify="right" if column == "#" else "left")
    for number, option in enumerate(starters.options, start=1):
        mark = "→" if option.id == starters.recommended else ""
        fit = _VERDICTS.get(option.verdict, "—") if option.verdict else "—"
        if option.verdict is not None and not option.comfortable:
            fit += " (tight)" if option.verdict != FitVerdict.DOES_NOT_FIT else ""
        table.add_row(
            str(number),
            mark,
            Text(option.title),
            format_bytes(option.size_bytes),
            fit,
            Text(option_state(option, starters.online)),
        )
    lines: list[RenderableType] = []
    if not starters.online and starters.offline_reason:
        lines.append(Text(f"Offline: {starters.offline_reason}", "yellow"))
    lines += [table, Text(""), Text(starters.reason)]
    return Group(*lines)
