"""`roundhouse models ...`: search Hugging Face, a model's page, the token, and (below) pulls."""

from __future__ import annotations

import click

from roundhouse.api.hub import HubModelKind, HubSearchRequest, HubSort
from roundhouse.cli.daemon_link import show_from_daemon


@click.group()
def models() -> None:
    """Find models on Hugging Face, download them, and manage the local library."""


@models.command("search")
@click.argument("query", required=False, default="")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice([k.value for k in HubModelKind]),
    help="Only this kind (repeatable); by default every kind local engines run.",
)
@click.option("--author", help="Only models of this user or organisation.")
@click.option(
    "--sort",
    type=click.Choice([s.value for s in HubSort]),
    default=HubSort.DOWNLOADS.value,
    show_default=True,
    help="Order of the results, most first.",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 100),
    default=20,
    show_default=True,
    help="At most this many results.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    kinds: tuple[str, ...],
    author: str | None,
    sort: str,
    limit: int,
    as_json: bool,
) -> None:
    """Search Hugging Face for models local engines can run (GGUF, MLX, safetensors)."""
    from roundhouse.cli.models_view import search_view

    request = HubSearchRequest(
        query=query,
        kinds=[HubModelKind(k) for k in kinds],
        author=author or None,
        sort=HubSort(sort),
        limit=limit,
    )
    show_from_daemon(ctx, as_json, lambda c: c.hub_search(request), search_view)


@models.command("info")
@click.argument("repo")
@click.option("--revision", default="main", show_default=True, help="Branch, tag or commit.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def info(ctx: click.Context, repo: str, revision: str, as_json: bool) -> None:
    """A model's page: summary, license, gated flag, and its files by quantization."""
    from roundhouse.cli.models_view import details_view

    show_from_daemon(ctx, as_json, lambda c: c.hub_model(repo, revision), details_view)


@models.command("token")
@click.option("--set", "set_", is_flag=True, help="Read a token from the prompt (or stdin).")
@click.option("--clear", is_flag=True, help="Forget the stored token.")
@click.option("--check", is_flag=True, help="Ask Hugging Face whether it accepts the token.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def token(ctx: click.Context, set_: bool, clear: bool, check: bool, as_json: bool) -> None:
    """The Hugging Face token that opens gated models, kept in the OS keyring."""
    from roundhouse.cli.models_view import token_view
    from roundhouse.cli.output import fail

    if set_ and clear:
        fail("Give --set or --clear, not both.", code=2)
    if set_:
        value = click.prompt("Hugging Face token", hide_input=True).strip()
        show_from_daemon(ctx, as_json, lambda c: c.set_hub_token(value), token_view)
    elif clear:
        show_from_daemon(ctx, as_json, lambda c: c.clear_hub_token(), token_view)
    else:
        show_from_daemon(ctx, as_json, lambda c: c.hub_token_status(check=check), token_view)


@models.command("pull")
@click.argument("repo")
@click.argument("choice", required=False)
@click.option("--revision", default="main", show_default=True, help="Branch, tag or commit.")
@click.option("--file", "files", multiple=True, help="A path in the repository (repeatable).")
@click.option("--detach", is_flag=True, help="Queue the download and return at once.")
@click.option(
    "--no-mmproj",
    is_flag=True,
    help="A GGUF without the vision projector (mmproj) its repository has beside it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the queued items as JSON.")
@click.option(
    "--instance", help="For ollama:NAME, the Ollama instance to pull into (`engines ps`)."
)
@click.pass_context
def pull(
    ctx: click.Context,
    repo: str,
    choice: str | None,
    revision: str,
    files: tuple[str, ...],
    detach: bool,
    no_mmproj: bool,
    as_json: bool,
    instance: str | None,
) -> None:
    """Download a model into the Hugging Face cache, or pull one into Ollama, with progress.

    CHOICE is a quantization from `roundhouse models info REPO` (Q4_K_M, Q8_0, ...); a
    repository with one choice (safetensors, MLX) needs none. REPO `ollama:NAME[:TAG]`
    pulls through Ollama's API into Ollama's own store, in the same queue. The download
    survives a restart of the daemon and resumes where it stopped. A GGUF from a repository
    with a vision projector (mmproj) beside it brings the projector too, unless --no-mmproj.
    """
    from roundhouse.cli.daemon_link import home_of, run_async
    from roundhouse.cli.models_pull import pull_files
    from roundhouse.cli.models_pull_ollama import ollama_model, pull_ollama
    from roundhouse.cli.output import fail

    model = ollama_model(repo)
    if model is not None:
        if choice or files or revision != "main":
            fail(
                "An Ollama pull takes a tag (ollama:NAME:TAG), not CHOICE, --file or --revision.",
                code=2,
            )
        if not model.strip():
            fail("Name the Ollama model: `roundhouse models pull ollama:qwen2.5:0.5b`.", code=2)
        run_async(pull_ollama(home_of(ctx), model, instance, detach, as_json))
        return
    if instance:
        fail("--instance applies to Ollama pulls (REPO ollama:NAME).", code=2)
    run_async(
        pull_files(
            home_of(ctx), repo, revision, choice, list(files), detach, as_json, not no_mmproj
        )
    )


@models.command("downloads")
@click.option("--pause", "pause_id", metavar="ID", help="Pause this download.")
@click.option("--resume", "resume_id", metavar="ID", help="Resume it from its partial file.")
@click.option("--cancel", "cancel_id", metavar="ID", help="Cancel it and remove its partial.")
@click.option("--clear", is_flag=True, help="Drop finished items from the list.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def downloads(
    ctx: click.Context,
    pause_id: str | None,
    resume_id: str | None,
    cancel_id: str | None,
    clear: bool,
    as_json: bool,
) -> None:
    """The download queue (Hub files and Ollama pulls): progress; pause, resume or cancel one
    by id."""
    from roundhouse.cli.models_view import download_item_view, queue_view
    from roundhouse.cli.output import fail

    chosen = [x for x in (pause_id, resume_id, cancel_id) if x] + (["clear"] if clear else [])
    if len(chosen) > 1:
        fail("Give one of --pause, --resume, --cancel or --clear.", code=2)
    if pause_id:
        show_from_daemon(ctx, as_json, lambda c: c.pause_download(pause_id), download_item_view)
    elif resume_id:
        show_from_daemon(ctx, as_json, lambda c: c.resume_download(resume_id), download_item_view)
    elif cancel_id:
        show_from_daemon(ctx, as_json, lambda c: c.cancel_download(cancel_id), download_item_view)
    elif clear:
        show_from_daemon(ctx, as_json, lambda c: c.clear_finished_downloads(), queue_view)
    else:
        show_from_daemon(ctx, as_json, lambda c: c.downloads(), queue_view)


@models.command("ls")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def ls(ctx: click.Context, as_json: bool) -> None:
    """Local models: the Hugging Face cache, your folders, LM Studio's and Ollama's."""
    from roundhouse.cli.models_view import library_view

    show_from_daemon(ctx, as_json, lambda c: c.library(), library_view)


@models.command("rm")
@click.argument("model_id")
@click.option("--dry-run", is_flag=True, help="Say what would be freed; delete nothing.")
@click.option("--yes", is_flag=True, help="Do not ask.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def rm(ctx: click.Context, model_id: str, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Delete a local model (its id from `roundhouse models ls`), saying what was freed."""
    from roundhouse.cli.models_view import delete_view

    if not dry_run and not yes and not click.confirm(f"Delete {model_id}?", default=False):
        raise SystemExit(1)
    show_from_daemon(
        ctx, as_json, lambda c: c.delete_library_model(model_id, dry_run=dry_run), delete_view
    )


@models.command("import")
@click.argument("path", type=click.Path(dir_okay=False, path_type=str))
@click.option("--folder", help="The library folder to put it in (default: Roundhouse's own).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def import_(ctx: click.Context, path: str, folder: str | None, as_json: bool) -> None:
    """Add a GGUF file to the library (checked, then hard-linked or copied)."""
    from pathlib import Path

    from roundhouse.api.library import ImportRequest
    from roundhouse.cli.models_view import library_model_view

    request = ImportRequest(path=str(Path(path).absolute()), folder=folder)
    show_from_daemon(ctx, as_json, lambda c: c.import_gguf(request), library_model_view)


@models.command("fit")
@click.argument("repo", required=False)
@click.argument("choice", required=False)
@click.option("--library", "library_id", metavar="ID", help="A local model (from `models ls`).")
@click.option("--revision", default="main", show_default=True, help="Branch, tag or commit.")
@click.option("--ctx", "context_length", type=click.IntRange(1), help="Context per request.")
@click.option(
    "--parallel",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Parallel request slots (each has its own KV cache).",
)
@click.option(
    "--cache-type",
    type=click.Choice(["f16", "q8_0", "q4_0"]),
    default="f16",
    show_default=True,
    help="KV cache type (K and V).",
)
@click.option("--gpu-layers", type=click.IntRange(0), help="llama.cpp's -ngl; default: auto.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def fit(
    ctx: click.Context,
    repo: str | None,
    choice: str | None,
    library_id: str | None,
    revision: str,
    context_length: int | None,
    parallel: int,
    cache_type: str,
    gpu_layers: int | None,
    as_json: bool,
) -> None:
    """Will it fit? Memory per device for a Hub model (before downloading) or a local one:
    a verdict, the breakdown, and what would make it fit."""
    from pydantic import ValidationError

    from roundhouse.api.fit import CacheType, FitOptions, FitQuery
    from roundhouse.cli.models_view import fit_view
    from roundhouse.cli.output import fail

    try:
        options = FitOptions(
            context_length=context_length,
            n_parallel=parallel,
            cache_type_k=CacheType(cache_type),
            cache_type_v=CacheType(cache_type),
            gpu_layers=gpu_layers,
        )
        query = FitQuery(
            repo=repo, revision=revision, group=choice, library_id=library_id, options=options
        )
    except ValidationError as exc:
        fail("; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()), code=2)
    show_from_daemon(ctx, as_json, lambda c: c.fit_model(query), fit_view)
