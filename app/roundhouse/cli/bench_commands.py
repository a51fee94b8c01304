"""`roundhouse bench MODEL` (run a serving benchmark) and its results: ls, show, compare, export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roundhouse.cli.daemon_link import daemon_client, run_async, show_from_daemon


class _BenchGroup(click.Group):
    """`bench MODEL ...` runs a benchmark; `bench ls|show|compare|export|rm` look at results."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_BenchGroup)
def bench() -> None:
    """Benchmark a model the gateway serves, as `vllm bench serve` does.

    `roundhouse bench MODEL` runs one; `ls`, `show ID`, `compare ID ID...`, `export ID` and
    `rm ID` look at the kept results; `ab MODEL --engines llama.cpp,vllm` compares engines.
    """


@bench.command("run")
@click.argument("model")
@click.option(
    "--num-prompts",
    "-n",
    default=100,
    show_default=True,
    type=click.IntRange(1),
    help="Requests measured (after the warm-ups).",
)
@click.option(
    "--request-rate",
    type=click.FloatRange(0, min_open=True),
    help="Poisson arrivals at R requests a second (seeded).",
)
@click.option("--max-concurrency", type=click.IntRange(1), help="Closed loop: at most C in flight.")
@click.option(
    "--input-len",
    default=256,
    show_default=True,
    type=click.IntRange(1),
    help="Prompt tokens per request (random words).",
)
@click.option(
    "--output-len",
    default=128,
    show_default=True,
    type=click.IntRange(1),
    help="Tokens generated per request (end of text ignored).",
)
@click.option(
    "--range-ratio",
    default=0.0,
    type=click.FloatRange(0, 1),
    help="Spread lengths uniformly over LEN x (1 +/- R); 0 keeps them fixed.",
)
@click.option(
    "--prompts",
    "prompts_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="ShareGPT prompts (JSONL or JSON) instead of random ones.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the prompts and the arrival times: the same seed, the same run.",
)
@click.option(
    "--warmups",
    default=1,
    show_default=True,
    type=click.IntRange(0, 100),
    help="Requests sent one by one first and not measured.",
)
@click.option("--sglang", is_flag=True, help="Follow sglang's conventions instead of vLLM's.")
@click.option("--completions", is_flag=True, help="Use /v1/completions instead of chat.")
@click.option(
    "--slo-ttft",
    type=click.FloatRange(0, min_open=True),
    help="Goodput: a request counts as good only within this time to first token (ms).",
)
@click.option(
    "--slo-tpot",
    type=click.FloatRange(0, min_open=True),
    help="Goodput: ... and within this time per output token (ms).",
)
@click.option("--label", help="A name for this run in lists and comparisons.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def run(ctx: click.Context, /, model: str, **options: Any) -> None:
    """Run a benchmark of MODEL through the gateway and print vLLM's result table."""
    from pydantic import ValidationError

    from roundhouse.api.bench import BenchRequest, Convention, Endpoint, Slos
    from roundhouse.cli.output import err_console, fail

    as_json = options.pop("as_json")
    prompts_file = options.pop("prompts_file")
    try:
        request = BenchRequest(
            model=model,
            num_prompts=options["num_prompts"],
            request_rate=options["request_rate"],
            max_concurrency=options["max_concurrency"],
            input_len=options["input_len"],
            output_len=options["output_len"],
            range_ratio=options["range_ratio"],
            prompts_jsonl=prompts_file.read_text(encoding="utf-8") if prompts_file else None,
            seed=options["seed"],
            warmups=options["warmups"],
            convention=Convention.SGLANG if options["sglang"] else Convention.VLLM,
            endpoint=Endpoint.COMPLETIONS if options["completions"] else Endpoint.CHAT,
            slos=Slos(ttft_ms=options["slo_ttft"], tpot_ms=options["slo_tpot"]),
            label=options["label"],
        )
    except (ValidationError, OSError, UnicodeDecodeError) as exc:
        fail(f"Cannot run this benchmark: {exc}")

    async def go() -> Any:
        async with daemon_client(ctx) as client:
            return await client.run_bench(request, on_progress=_progress_line(err_console))

    result = run_async(go())
    _show(result, as_json)


def progress_text(done: int, total: int, failed: int) -> str:
    """ "3 of 5 done: 1 succeeded, 2 failed": failures are never folded into the count."""
    line = f"{done} of {total} done: {done - failed} succeeded"
    return line + (f", {failed} failed" if failed else "")


def _progress_line(console: Any) -> Any:
    from roundhouse.api.bench import progress_words

    last = [""]

    def show(progress: Any) -> None:
        line = progress_words(progress.done, progress.total, progress.failed)
        if line != last[0] and console.is_terminal:
            last[0] = line
            console.print("\r" + line.ljust(50), end="", highlight=False)

    return show


def _show(result: Any, as_json: bool) -> None:
    from roundhouse.cli.bench_view import result_view
    from roundhouse.cli.output import console, print_json

    if as_json:
        print_json(result)
    else:
        console.print(result_view(result))


@bench.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ls(ctx: click.Context, as_json: bool) -> None:
    """List the kept benchmark results, newest first."""
    from roundhouse.cli.bench_view import list_view

    show_from_daemon(ctx, as_json, lambda c: c.bench_results(), list_view)


@bench.command("show")
@click.argument("bench_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def show(ctx: click.Context, bench_id: str, as_json: bool) -> None:
    """Show one result as vLLM's table."""
    from roundhouse.cli.bench_view import result_view

    show_from_daemon(ctx, as_json, lambda c: c.bench_result(bench_id), result_view)


@bench.command("compare")
@click.argument("bench_ids", nargs=-1, required=True)
@click.pass_context
def compare(ctx: click.Context, bench_ids: tuple[str, ...]) -> None:
    """Compare results side by side (across runs and engines)."""
    from roundhouse.cli.bench_view import compare_view
    from roundhouse.cli.output import console

    async def fetch() -> list[Any]:
        async with daemon_client(ctx) as client:
            return [await client.bench_result(i) for i in bench_ids]

    console.print(compare_view(run_async(fetch())))


@bench.command("export")
@click.argument("bench_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "csv", "json"]),
    default="md",
    show_default=True,
    help="A Markdown table shaped like vLLM's, CSV rows, or the whole results as JSON.",
)
@click.pass_context
def export(ctx: click.Context, bench_id: str, fmt: str) -> None:
    """Print one result as a Markdown table shaped like vLLM's, CSV or JSON."""
    import sys

    from roundhouse.api.bench import ExportFormat

    async def fetch() -> str:
        async with daemon_client(ctx) as client:
            text: str = await client.export_bench(bench_id, ExportFormat(fmt))
            return text

    sys.stdout.write(run_async(fetch()))


@bench.command("rm")
@click.argument("bench_id")
@click.pass_context
def rm(ctx: click.Context, bench_id: str) -> None:
    """Delete a kept result."""
    from roundhouse.cli.output import console

    async def delete() -> None:
        async with daemon_client(ctx) as client:
            await client.delete_bench(bench_id)

    run_async(delete())
    console.print(f"Deleted benchmark {bench_id}.", highlight=False)


@bench.command("ab")
@click.argument("model")
@click.option("--engines", required=True, help="Comma-separated, in order: llama.cpp,mlx")
@click.option(
    "--model-for",
    multiple=True,
    metavar="ENGINE=MODEL",
    help="The model in an engine's own format (MLX folder for mlx); repeatable.",
)
@click.option(
    "--num-prompts",
    "-n",
    default=50,
    show_default=True,
    type=click.IntRange(1),
    help="Requests measured on each engine.",
)
@click.option(
    "--max-concurrency",
    default=4,
    show_default=True,
    type=click.IntRange(1),
    help="Closed loop: at most C in flight on each engine.",
)
@click.option(
    "--input-len",
    default=256,
    show_default=True,
    type=click.IntRange(1),
    help="Prompt tokens per request.",
)
@click.option(
    "--output-len",
    default=128,
    show_default=True,
    type=click.IntRange(1),
    help="Tokens generated per request.",
)
@click.option(
    "--ctx-size",
    default=4096,
    show_default=True,
    type=click.IntRange(64),
    help="Context each engine is started with, the same on both.",
)
@click.option("--label", help="A name for both runs in lists and comparisons.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.pass_context
def ab(ctx: click.Context, /, model: str, **options: Any) -> None:
    """Benchmark MODEL on each engine back to back (one at a time) and compare them."""
    import json

    from pydantic import ValidationError

    from roundhouse.api.bench import AbRequest, BenchRequest, progress_words
    from roundhouse.cli.bench_view import compare_view
    from roundhouse.cli.output import console, err_console, fail

    pairs = [p.partition("=") for p in options["model_for"]]
    if any(not sep or not value for _, sep, value in pairs):
        fail("Give --model-for as ENGINE=MODEL, for example --model-for mlx=~/models/tiny-mlx.")
    try:
        request = AbRequest(
            model=model,
            engines=[e.strip() for e in options["engines"].split(",") if e.strip()],
            models={engine: value for engine, _, value in pairs},
            ctx_size=options["ctx_size"],
            workload=BenchRequest(
                model=model,
                num_prompts=options["num_prompts"],
                max_concurrency=options["max_concurrency"],
                input_len=options["input_len"],
                output_len=options["output_len"],
                label=options["label"],
            ),
        )
    except ValidationError as exc:
        fail(f"Cannot run this A/B: {exc}")

    last = [""]

    def show(progress: Any) -> None:
        counts = progress_words(progress.done, progress.total, progress.failed)
        line = f"{progress.stage}: {counts}"
        if line != last[0] and err_console.is_terminal:
            last[0] = line
            err_console.print("\r" + line.ljust(60), end="", highlight=False)

    async def go() -> Any:
        async with daemon_client(ctx) as client:
            return await client.run_ab(request, on_progress=show)

    results = run_async(go())
    if options["as_json"]:
        click.echo(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
    else:
        console.print(compare_view(results))
