"""`roundhouse launch AGENT [MODEL]`: start a coding agent pointed at the gateway and a model."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from roundhouse.api.clients import ClientSetup, ClientSpec, GatewayTarget
    from roundhouse.base.paths import Home

# Where the arguments after `--` wait for the command (click would take `--` away).
_AGENT_ARGS = "roundhouse.launch.agent_args"
NO_MODEL = (
    "No model named and no active model set. Name one: `roundhouse launch {agent} MODEL`, "
    "with a model from `roundhouse gateway models`, or set a default with `roundhouse "
    "settings set chat.active_model MODEL`."
)


class _LaunchCommand(click.Command):
    """Everything after the first `--` goes to the agent untouched, options included."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            ctx.meta[_AGENT_ARGS] = args[cut + 1 :]
            args = args[:cut]
        return super().parse_args(ctx, args)


def _agent_names() -> str:
    from roundhouse.api.clients import agents

    return ", ".join(agents())


@click.command(cls=_LaunchCommand)
@click.argument("agent")
@click.argument("model", required=False)
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print the environment and command as shell lines instead of starting anything.",
)
@click.option("--show-key", is_flag=True, help="With --print: show the key instead of masking it.")
@click.pass_context
def launch(
    ctx: click.Context, agent: str, model: str | None, print_only: bool, show_key: bool
) -> None:
    """Start a coding agent installed here (claude, codex, opencode) pointed at the gateway
    and MODEL, serving the model first if nothing serves it yet.

    MODEL defaults to the active model. Arguments after `--` go to the agent:
    `roundhouse launch codex qwen3 -- exec "fix the tests"`.
    """
    from roundhouse.api.clients import ClientTableError, agents
    from roundhouse.cli.daemon_link import home_of
    from roundhouse.cli.output import fail

    try:
        table = agents()
    except ClientTableError as exc:
        fail(str(exc))
    spec = table.get(agent)
    if spec is None:
        fail(f"Unknown agent {agent!r}: Roundhouse launches {_agent_names()}.", code=2)
    extra: list[str] = ctx.meta.get(_AGENT_ARGS, [])
    home = home_of(ctx)
    if print_only:
        target = _resolve(home, agent, model, serve=False)
        _print_setup(spec, target, extra, show_key)
        return
    executable = _installed(spec)
    target = _resolve(home, agent, model, serve=True)
    _exec(spec, executable, target, extra)


def _installed(spec: ClientSpec) -> str:
    import shutil

    from roundhouse.cli.output import fail

    assert spec.command is not None
    found = shutil.which(spec.command)
    if found is None:
        fail(
            f"{spec.name} is not installed here (no `{spec.command}` on PATH). "
            f"Install it with `{spec.install}`, then run this again."
        )
    return found


def _resolve(home: Home, agent: str, model: str | None, *, serve: bool) -> GatewayTarget:
    """The gateway's address, its key and the model, which is served first when `serve`."""
    from roundhouse.cli.daemon_link import run_async

    target = run_async(_ask(home, agent, model, serve=serve))
    if serve:
        from roundhouse.cli.run_command import serve_now

        serve_now(home, target.model)
    return target


async def _ask(home: Home, agent: str, model: str | None, *, serve: bool) -> GatewayTarget:
    from roundhouse.api.clients import PLACEHOLDER_KEY, GatewayTarget
    from roundhouse.cli.output import fail
    from roundhouse.client import DaemonClient

    async with DaemonClient.for_home(home) as client:
        listed = await client.gateway_models()
        chosen = model or listed.active_model
        if not chosen:
            fail(NO_MODEL.format(agent=agent), code=2)
        known = {m.id for m in listed.models} | {m.model for m in listed.models if m.model}
        if chosen not in known and not listed.default_model and (model is None or not serve):
            # A launch asks the gateway to serve the name and passes on its words; a print
            # starts nothing, and the active model (a chat setting) may name something gone.
            # With a default model set, the gateway serves any name: nothing to refuse.
            which = "The model" if model else "The active model"
            fail(f"{which} {chosen!r} is not one the gateway knows. " + _listing(known))
        key = await client.gateway_key()
        return GatewayTarget(root=client.base_url, key=key or PLACEHOLDER_KEY, model=chosen)


def _listing(known: set[str]) -> str:
    names = ", ".join(sorted(known)) or "none"
    return f"Models available: {names}. See `roundhouse gateway models`."


def _print_setup(spec: ClientSpec, target: GatewayTarget, extra: list[str], show: bool) -> None:
    from roundhouse.api.clients import mask_key, setup_for, shell_lines

    shown = target if show else target.model_copy(update={"key": mask_key(target.key)})
    sys.stdout.write(shell_lines(spec, setup_for(spec, shown), extra) + "\n")
    sys.stdout.flush()


def agent_environment(base: dict[str, str], setup: ClientSetup) -> dict[str, str]:
    """The agent's environment: this one, less `unset`, with the gateway's variables."""
    env = {name: value for name, value in base.items() if name not in setup.unset}
    env.update(setup.env)
    return env


def _exec(spec: ClientSpec, executable: str, target: GatewayTarget, extra: list[str]) -> None:
    from roundhouse.api.clients import setup_for

    setup = setup_for(spec, target)
    env = agent_environment(dict(os.environ), setup)
    argv: list[Any] = [spec.command, *setup.args, *extra]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        # The agent takes this process's place: its terminal, signals and exit status.
        os.execve(executable, argv, env)
    import subprocess

    # Windows has no exec that keeps the console's process: wait and pass the status on.
    raise SystemExit(subprocess.call([executable, *argv[1:]], env=env))
