"""Write docs/cli.md, the command-line reference, by walking the click command tree itself."""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "docs" / "cli.md"
PROG = "roundhouse"
REGENERATE = "python docs/gen_cli_reference.py"

# The reference describes this checkout's CLI, not whichever roundhouse is installed.
sys.path.insert(0, str(REPO / "app"))

# click >= 8.2 marks "no default given" with a sentinel rather than None.
_UNSET = getattr(click.core, "UNSET", None)

_TYPE_NAMES = {"text": "text", "integer": "integer", "float": "number", "boolean": "yes/no"}


def root_command() -> click.Group:
    from roundhouse.cli.main import cli

    return cli


def walk(command: click.Command, ctx: click.Context) -> Iterator[click.Context]:
    """Every visible command, depth first, subcommands in the order `--help` lists them."""
    yield ctx
    if not isinstance(command, click.Group):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or sub.hidden:
            continue
        yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))


def all_command_paths() -> list[str]:
    """`roundhouse`, `roundhouse engines`, `roundhouse engines start`, ... in document order."""
    root = root_command()
    return [ctx.command_path for ctx in walk(root, click.Context(root, info_name=PROG))]


def _cell(text: str) -> str:
    """Text that is safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`".replace("|", "\\|")


def _range(param_type: Any) -> str:
    """`from 1 to 65535`, `≥ 1`, `> 0 and ≤ 1`: the bounds of an IntRange or FloatRange."""
    closed = not (param_type.min_open or param_type.max_open)
    if closed and param_type.min is not None and param_type.max is not None:
        return f"from {param_type.min} to {param_type.max}"
    bounds = []
    if param_type.min is not None:
        bounds.append(f"{'>' if param_type.min_open else '≥'} {param_type.min}")
    if param_type.max is not None:
        bounds.append(f"{'<' if param_type.max_open else '≤'} {param_type.max}")
    return " and ".join(bounds)


def describe_type(param: click.Parameter) -> str:
    """What a value looks like, in words: a flag, one of some choices, a bounded number."""
    if isinstance(param, click.Option) and param.count:
        return "count (repeat it)"
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    kind = param.type
    if isinstance(kind, click.Choice):
        text = "one of " + ", ".join(_code(str(choice)) for choice in kind.choices)
    elif isinstance(kind, click.types._NumberRangeBase):
        base = "integer" if isinstance(kind, click.IntRange) else "number"
        bounds = _range(kind)
        text = f"{base} {bounds}" if bounds else base
    elif isinstance(kind, click.Path):
        text = kind.name
    else:
        text = _TYPE_NAMES.get(kind.name, kind.name)
    if isinstance(param, click.Option) and param.metavar:
        text = f"{_code(param.metavar)}: {text}"
    return text


def describe_default(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and isinstance(param.show_default, str):
        return _cell(param.show_default)
    value: Any = param.get_default(ctx, call=False)
    if callable(value):
        return "computed when run"
    if isinstance(param, click.Option) and param.is_flag:
        if param.secondary_opts:
            return "on" if value else "off"
        return "on" if value is True else ""
    if value is None or value is _UNSET or value == "" or value == ():
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_code(str(item)) for item in value)
    return _code(str(value))


def _sentence(text: str) -> str:
    """One table cell of help text, ending in a full stop so that notes can follow it."""
    text = _cell(text)
    return text if not text or text[-1] in ".!?)" else f"{text}."


def _option_names(option: click.Option) -> str:
    names = ", ".join(_code(name) for name in option.opts)
    if option.secondary_opts:
        names += " / " + ", ".join(_code(name) for name in option.secondary_opts)
    return names


def _option_notes(option: click.Option) -> list[str]:
    notes = []
    if option.required:
        notes.append("Required.")
    if option.multiple and "repeatable" not in (option.help or "").lower():
        notes.append("Repeatable.")
    envvars = [option.envvar] if isinstance(option.envvar, str) else list(option.envvar or ())
    if envvars:
        notes.append("Also read from " + ", ".join(_code(name) for name in envvars) + ".")
    return notes


def options_table(command: click.Command, ctx: click.Context) -> list[str]:
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    if not options:
        return []
    lines = ["**Options**", "", "| Option | Value | Default | Description |", "|---|---|---|---|"]
    for option in options:
        description = " ".join([_sentence(option.help or ""), *_option_notes(option)]).strip()
        lines.append(
            f"| {_option_names(option)} | {describe_type(option)} "
            f"| {describe_default(option, ctx)} | {description} |"
        )
    return [*lines, ""]


def _argument_count(argument: click.Argument) -> str:
    if argument.nargs == -1:
        return "one or more" if argument.required else "any number"
    if argument.nargs > 1:
        return f"exactly {argument.nargs}"
    return "required" if argument.required else "optional"


def arguments_table(command: click.Command, ctx: click.Context) -> list[str]:
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if not arguments:
        return []
    lines = ["**Arguments**", "", "| Argument | Value | Default | Needed |", "|---|---|---|---|"]
    for argument in arguments:
        lines.append(
            f"| {_code(argument.human_readable_name)} | {describe_type(argument)} "
            f"| {describe_default(argument, ctx)} | {_argument_count(argument)} |"
        )
    return [*lines, ""]


def help_paragraphs(command: click.Command) -> list[str]:
    """The command's help as Markdown paragraphs; click's `\\b` blocks stay as written."""
    text = inspect.cleandoc(command.help or "").partition("\f")[0]
    lines: list[str] = []
    for paragraph in text.split("\n\n"):
        if not paragraph.strip():
            continue
        if paragraph.startswith("\b"):
            lines += ["```text", paragraph.removeprefix("\b").strip("\n"), "```", ""]
        else:
            lines += [" ".join(paragraph.split()), ""]
    if getattr(command, "deprecated", False):
        lines += ["*Deprecated.*", ""]
    return lines or ["*(No help text.)*", ""]


def usage_line(command: click.Command, ctx: click.Context) -> str:
    return " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])


def command_section(ctx: click.Context) -> list[str]:
    command = ctx.command
    depth = ctx.command_path.count(" ")
    heading = "#" * min(2 + max(depth - 1, 0), 6)
    lines = [f"{heading} `{ctx.command_path}`", ""]
    lines += ["```text", usage_line(command, ctx), "```", ""]
    lines += help_paragraphs(command)
    lines += arguments_table(command, ctx)
    lines += options_table(command, ctx)
    if isinstance(command, click.Group):
        subs = [name for name in command.list_commands(ctx) if _visible(command, ctx, name)]
        if subs:
            links = ", ".join(
                f"[`{name}`](#{_anchor(f'{ctx.command_path} {name}')})" for name in subs
            )
            lines += [f"Commands: {links}.", ""]
    return lines


def _visible(group: click.Group, ctx: click.Context, name: str) -> bool:
    sub = group.get_command(ctx, name)
    return sub is not None and not sub.hidden


def _anchor(command_path: str) -> str:
    """GitHub's heading anchor for a heading that is just the command path in backticks."""
    kept = "".join(ch for ch in command_path.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def summary_of(command: click.Command) -> str:
    """The first paragraph of the help: click's own short help cuts at any `. `, code too."""
    if command.short_help:
        return command.short_help
    text = inspect.cleandoc(command.help or "").partition("\f")[0]
    return text.split("\n\n", 1)[0].removeprefix("\b")


def index_table(contexts: list[click.Context]) -> list[str]:
    lines = ["| Command | What it does |", "|---|---|"]
    for ctx in contexts:
        summary = summary_of(ctx.command)
        link = f"[`{ctx.command_path}`](#{_anchor(ctx.command_path)})"
        lines.append(f"| {link} | {_cell(summary)} |")
    return [*lines, ""]


def render() -> str:
    """The whole reference as Markdown; the same CLI always gives the same text."""
    root = root_command()
    contexts = list(walk(root, click.Context(root, info_name=PROG)))
    lines = [
        "# Command-line reference",
        "",
        f"<!-- Generated from the CLI by `{REGENERATE}`; edit the commands, not this file. -->",
        "",
        "Every command and option of `roundhouse`, as the command line itself defines them.",
        "Every command also takes `-h` / `--help`. Commands that talk to the daemon fail with",
        "one line on standard error and exit code 1 when something goes wrong; `roundhouse",
        "status` exits 3 when no daemon runs. See [the user guide](guide.md) for what the",
        "commands are for and [troubleshooting](troubleshooting.md) when one fails.",
        "",
        *index_table(contexts),
    ]
    for ctx in contexts:
        lines += command_section(ctx)
    return "\n".join(lines).rstrip("\n") + "\n"


def check(output: Path, expected: str) -> int:
    current = output.read_text(encoding="utf-8") if output.exists() else ""
    if current == expected:
        print(f"{output} is up to date.")
        return 0
    diff = list(
        difflib.unified_diff(
            current.splitlines(), expected.splitlines(), "written", "from the CLI", lineterm=""
        )
    )
    shown = "\n".join(diff[:40]) + ("\n..." if len(diff) > 40 else "")
    print(
        f"{output} is out of date: the CLI has changed since it was written.\n"
        f"Regenerate it with `{REGENERATE}` and commit the result.\n{shown}",
        file=sys.stderr,
    )
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="Exit 1 if the file differs from what the CLI says."
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="Default: docs/cli.md.")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        return check(args.output, text)
    args.output.write_text(text, encoding="utf-8")
    print(f"Wrote {args.output}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
