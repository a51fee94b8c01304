"""`roundhouse compare`: two models answer the same prompt at once, side by side in figures."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from roundhouse.cli.daemon_link import daemon_client, run_async

# Only click loads with the CLI: the client and rich load when the command runs.
if TYPE_CHECKING:
    from roundhouse.api.chat import ReplyStats
    from roundhouse.client.chat_compare import ComparedReply


@click.command()
@click.argument("model_a")
@click.argument("model_b")
@click.argument("prompt", required=False)
@click.option("--system", "-s", "system_prompt", default="", help="A system prompt for both.")
@click.option("--temperature", type=click.FloatRange(0, 2), help="Sampling temperature.")
@click.option("--max-tokens", type=click.IntRange(1, 1_000_000), help="At most this many tokens.")
@click.option(
    "--save", is_flag=True, help="Keep each exchange in the chat history, one conversation each."
)
@click.option("--json", "as_json", is_flag=True, help="Print both replies as JSON.")
@click.pass_context
def compare(
    ctx: click.Context,
    model_a: str,
    model_b: str,
    prompt: str | None,
    system_prompt: str,
    temperature: float | None,
    max_tokens: int | None,
    save: bool,
    as_json: bool,
) -> None:
    """Ask MODEL_A and MODEL_B the same PROMPT at once; print both replies, each with the
    engine that served it, its time to first token and tokens/s.

    Any two names the gateway serves (`roundhouse gateway models`): two running instances,
    or aliases. PROMPT may come on standard input. Nothing is kept in the chat history
    unless --save (then each exchange is a conversation of its own, named with its model).
    Both run at the same time, so on one machine each one's tokens/s is measured while the
    other runs too. Exits 1 when a reply failed.
    """
    import sys

    from roundhouse.api.chat import SamplingParams
    from roundhouse.cli.output import fail
    from roundhouse.client.chat_compare import compare as compare_models
    from roundhouse.client.chat_compare import kept_conversation

    if prompt is None and not sys.stdin.isatty():
        prompt = sys.stdin.read()
    if prompt is None or not prompt.strip():
        fail("Nothing to send: give the prompt after the two models, or on stdin.")
    if model_a == model_b:
        fail(f"Name two different models to compare (both are {model_a}).")
    params = SamplingParams(temperature=temperature, max_tokens=max_tokens)

    text = prompt.strip()

    async def ask() -> tuple[list[ComparedReply], list[str]]:
        async with daemon_client(ctx) as client:
            replies = await compare_models(client, [model_a, model_b], text, system_prompt, params)
            kept: list[str] = []
            for reply in replies if save else ():
                new = kept_conversation(
                    text, reply.model, reply.as_message(), system_prompt, params
                )
                kept.append((await client.create_chat(new)).id)
            return replies, kept

    replies, kept = run_async(ask())
    _print(replies, text, as_json, kept)
    if any(reply.error for reply in replies):
        raise SystemExit(1)


def _print(replies: list[ComparedReply], prompt: str, as_json: bool, kept: list[str]) -> None:
    from rich.rule import Rule

    from roundhouse.cli.chat_view import stats_line
    from roundhouse.cli.output import console, err_console, print_json

    if as_json:
        print_json(
            {
                "prompt": prompt,
                "replies": [
                    {
                        "model": reply.model,
                        "content": reply.content,
                        "reasoning": reply.reasoning or None,
                        "stats": reply.stats.model_dump(mode="json"),
                        "error": reply.error,
                        "conversation_id": kept[index] if kept else None,
                    }
                    for index, reply in enumerate(replies)
                ],
            }
        )
        return
    for reply in replies:
        console.print(Rule(reply.model, align="left"))
        if reply.content:
            console.print(reply.content, markup=False, highlight=False)
        if reply.error:
            console.print(f"[bold red]Failed:[/] {reply.error}", highlight=False)
        console.print(stats_line(reply.stats), style="dim", markup=False, highlight=False)
    console.print(Rule())
    for reply in replies:
        console.print(f"{reply.model}: {_figures(reply.stats)}", markup=False, highlight=False)
    if kept:
        err_console.print(
            f"Kept in the history as {', '.join(kept)} (`roundhouse chats show ID`).",
            highlight=False,
        )


def _figures(stats: ReplyStats) -> str:
    """'llama.cpp, TTFT 120 ms, 812.0 tok/s' for the closing summary."""
    engine = stats.engine or "engine unknown"
    ttft = f"TTFT {stats.ttft_ms:,.0f} ms" if stats.ttft_ms is not None else "no first token"
    rate = f"{stats.tokens_per_s:,.1f} tok/s" if stats.tokens_per_s is not None else "tok/s unknown"
    return f"{engine}, {ttft}, {rate}"
