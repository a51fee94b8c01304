"""Tool-call and reasoning parsers for vLLM and SGLang, chosen from the model's own files.

vLLM refuses a request with `tools` unless it was started with --enable-auto-tool-choice and
a --tool-call-parser, and both engines leave a model's thinking in the content unless given
a --reasoning-parser. Which parser reads a model's output depends on its family: the table
in resources/engines/tool_parsers.toml maps config.json's model_type and architectures and
the chat template's markers to each engine's parser names. The user's choice
(`tool_parser`, `reasoning_parser`; "none" turns one off) or the same flag in the extra
arguments wins over the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import ValidationError

from roundhouse.api.engines import EngineId, EngineSpec, InstanceOptions
from roundhouse.api.tool_parsers import ParserChoice, ParserRule, ParserTable
from roundhouse.base.resources import read_toml, resource_path
from roundhouse.core.engines.extra_args import flags_given
from roundhouse.core.errors import InvalidInputError, RoundhouseError

# The value that turns a parser off.
OFF = "none"
AUTO_TOOL_CHOICE = "--enable-auto-tool-choice"
TOOL_FLAG = "--tool-call-parser"
REASONING_FLAG = "--reasoning-parser"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_TITLES = {EngineId.VLLM: "vLLM", EngineId.SGLANG: "SGLang"}
# The files a chat template may live in, in the order transformers reads them.
_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
_MAX_FILE_BYTES = 4 * 1024 * 1024


class ParserTableError(RoundhouseError):
    """The parser table is broken: the message names the file and the rule."""

    title = "Tool parser table is invalid"
    status = 500


@dataclass(frozen=True)
class ChatFacts:
    """What a model's files say about how it writes calls and thoughts."""

    model_type: str | None
    architectures: tuple[str, ...]
    template: str
    where: str


def table_file() -> Path:
    return resource_path("engines", "tool_parsers.toml")


@cache
def load_table(path: Path | None = None) -> ParserTable:
    """The table at `path` (default: the bundled one); raises ParserTableError when malformed."""
    path = path or table_file()
    data = read_toml(path, "tool parser table", ParserTableError)
    rules = data.get("rule")
    if not isinstance(rules, list) or not rules:
        raise ParserTableError(f"The tool parser table {path} has no [[rule]] tables.")
    try:
        table = ParserTable(rules=rules)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(k) for k in first["loc"])
        raise ParserTableError(
            f"The tool parser table {path} is invalid at {where}: {first['msg']}."
        ) from exc
    for rule in table.rules:
        names = (rule.vllm_tool, rule.vllm_reasoning, rule.sglang_tool, rule.sglang_reasoning)
        if not any(names):
            raise ParserTableError(f"The tool parser table {path}: {rule.family} names no parser.")
        for name in names:
            if name is not None and not _NAME.match(name):
                raise ParserTableError(
                    f"The tool parser table {path}: {rule.family} names {name!r}, not a parser."
                )
    return table


# -- reading the model's files (the only effect here) ---------------------------------------


def model_folder(model: str, hf_hub_cache: str | None) -> Path | None:
    """The folder holding `model`'s config and tokenizer files: the folder itself, or the
    snapshot of a repo id in `hf_hub_cache` (its "main" ref, else the newest); None if absent."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if path.is_file() or model.count("/") != 1:
        return None
    if hf_hub_cache is None:
        # Only the cache the engine is told to use counts (the builder stays repeatable).
        return None
    repo = Path(hf_hub_cache) / ("models--" + model.replace("/", "--"))
    snapshots = repo / "snapshots"
    try:
        commit = (repo / "refs" / "main").read_text(encoding="utf-8").strip()
    except OSError:
        commit = ""
    if commit and (snapshots / commit).is_dir():
        return snapshots / commit
    try:
        found = [p for p in snapshots.iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _template_text(value: object) -> str:
    """tokenizer_config.json's chat_template: one string, or a list of named templates."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [t.get("template") for t in value if isinstance(t, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def read_chat_facts(model: str, hf_hub_cache: str | None = None) -> ChatFacts | None:
    """config.json's model type and architectures and the chat template, from the model's
    folder; None when neither file is there (a repo not downloaded yet, a GGUF file)."""
    folder = model_folder(model, hf_hub_cache)
    if folder is None:
        return None
    config = _read_json(folder / "config.json") or {}
    tokenizer = _read_json(folder / "tokenizer_config.json") or {}
    template = _template_text(tokenizer.get("chat_template"))
    for name in _TEMPLATE_FILES:
        if template:
            break
        path = folder / name
        if name.endswith(".json"):
            template = _template_text((_read_json(path) or {}).get("chat_template"))
            continue
        try:
            if path.is_file() and path.stat().st_size <= _MAX_FILE_BYTES:
                template = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            template = ""
    model_type = config.get("model_type")
    architectures = config.get("architectures")
    if not config and not template:
        return None
    return ChatFacts(
        model_type=model_type if isinstance(model_type, str) else None,
        architectures=tuple(a for a in architectures or () if isinstance(a, str))
        if isinstance(architectures, list)
        else (),
        template=template,
        where=str(folder),
    )


# -- choosing (pure) -------------------------------------------------------------------------


def match_rule(facts: ChatFacts, table: ParserTable) -> ParserRule | None:
    """The first rule whose model types or architectures (when it names any) include the
    model's and whose template markers are all in its chat template."""
    for rule in table.rules:
        if rule.model_types or rule.architectures:
            by_type = facts.model_type in rule.model_types
            by_arch = any(a in rule.architectures for a in facts.architectures)
            if not (by_type or by_arch):
                continue
        if all(marker in facts.template for marker in rule.template_has):
            return rule
    return None


def check_override(kind: str, value: str | None) -> None:
    """Refuse, in words, a parser name no engine could have."""
    if value is not None and not _NAME.match(value):
        raise InvalidInputError(
            f"{value!r} is not a {kind} parser name: give the engine's name for it (for "
            f"example hermes, qwen3, deepseek_r1), or {OFF!r} to start without one."
        )


def choose_parsers(
    engine: EngineId,
    facts: ChatFacts | None,
    *,
    tool: str | None = None,
    reasoning: str | None = None,
    table: ParserTable | None = None,
) -> ParserChoice:
    """The parsers `engine` (vLLM or SGLang) gets: the user's `tool`/`reasoning` where set
    ("none": off), else the table's rule for the model's family; with the reasons, in words."""
    title = _TITLES[engine]
    check_override("tool-call", tool)
    check_override("reasoning", reasoning)
    rule = match_rule(facts, table or load_table()) if facts is not None else None
    prefix = "vllm" if engine == EngineId.VLLM else "sglang"
    table_tool = getattr(rule, f"{prefix}_tool") if rule else None
    table_reasoning = getattr(rule, f"{prefix}_reasoning") if rule else None
    notes: list[str] = []
    if facts is None:
        notes.append(
            f"Tool calls and reasoning: no config.json or chat template found for the model, "
            f"so {title} starts without parsers; set tool_parser and reasoning_parser to "
            "choose them."
        )
    elif rule is None:
        found = facts.model_type or "no model_type"
        notes.append(
            f"Tool calls and reasoning: no rule in the parser table fits this model ({found}, "
            f"read from {facts.where}); set tool_parser and reasoning_parser to choose them."
        )
    else:
        notes.append(
            f"Tool calls and reasoning: the model is {rule.family} ({facts.model_type or '?'}, "
            f"read from {facts.where}). {rule.why}"
        )
    chosen_tool = _pick("tool-call", title, tool, table_tool, rule, notes)
    chosen_reasoning = _pick("reasoning", title, reasoning, table_reasoning, rule, notes)
    return ParserChoice(
        tool=chosen_tool,
        reasoning=chosen_reasoning,
        family=rule.family if rule else None,
        notes=notes,
    )


def _pick(
    kind: str,
    title: str,
    given: str | None,
    from_table: str | None,
    rule: ParserRule | None,
    notes: list[str],
) -> str | None:
    if given is not None and given.lower() == OFF:
        notes.append(f"{title} {kind} parser: none (turned off in the instance's options).")
        return None
    if given is not None:
        notes.append(f"{title} {kind} parser: {given} (set in the instance's options).")
        return given
    if from_table is not None:
        family = rule.family if rule else "?"
        notes.append(f"{title} {kind} parser: {from_table} (the table's choice for {family}).")
        return from_table
    if rule is not None:
        notes.append(f"{title} {kind} parser: none ({rule.family} needs none in {title}).")
    return None


def parser_args(
    engine: EngineId, choice: ParserChoice, extra_args: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The flags for `choice` and notes, leaving out each flag the extra arguments already
    give (theirs wins, never twice on the command line); argparse prefixes count."""
    given = flags_given(extra_args, (AUTO_TOOL_CHOICE, TOOL_FLAG, REASONING_FLAG), prefixes=True)
    args: list[str] = []
    notes: list[str] = []
    if choice.tool is not None:
        if TOOL_FLAG in given:
            notes.append(f"{TOOL_FLAG} comes from the extra arguments: the table's is not added.")
        else:
            if engine == EngineId.VLLM and AUTO_TOOL_CHOICE not in given:
                args.append(AUTO_TOOL_CHOICE)
            args += [TOOL_FLAG, choice.tool]
    if choice.reasoning is not None:
        if REASONING_FLAG in given:
            notes.append(
                f"{REASONING_FLAG} comes from the extra arguments: the table's is not added."
            )
        else:
            args += [REASONING_FLAG, choice.reasoning]
    return args, notes


def check_not_twice(
    title: str,
    option: str,
    value: str | None,
    flag: str,
    extra_args: Sequence[str],
    *,
    prefixes: bool = True,
) -> None:
    """Refuse a parser set both as an option and as a flag in the extra arguments
    (`prefixes`: the engine reads a flag's prefix as the flag, as argparse does)."""
    if value is not None and flag in flags_given(extra_args, (flag,), prefixes=prefixes):
        raise InvalidInputError(
            f"{title} was given {option} and {flag} in the extra arguments: set it once "
            f"(the {option} setting, or the extra argument)."
        )


def parser_flags(
    spec: EngineSpec, params: InstanceOptions, model: str, hf_hub_cache: str | None
) -> tuple[list[str], tuple[str, ...]]:
    """vLLM's or SGLang's parser flags for `model` and the notes saying why (read from the
    model's folder; the user's options and extra arguments win)."""
    extra = params.extra_args
    check_not_twice(spec.title, "tool_parser", params.tool_parser, TOOL_FLAG, extra)
    check_not_twice(spec.title, "reasoning_parser", params.reasoning_parser, REASONING_FLAG, extra)
    facts = read_chat_facts(model, hf_hub_cache)
    choice = choose_parsers(
        spec.id, facts, tool=params.tool_parser, reasoning=params.reasoning_parser
    )
    args, more = parser_args(spec.id, choice, extra)
    return args, (*choice.notes, *more)
