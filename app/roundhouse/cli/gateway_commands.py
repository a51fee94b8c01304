"""`roundhouse gateway models|usage|routes`: what the gateway serves, its use, its routes."""

from __future__ import annotations

import click

from roundhouse.cli.daemon_link import show_from_daemon


@click.group()
def gateway() -> None:
    """The OpenAI-compatible gateway at the daemon's address + /v1."""


@gateway.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def models(ctx: click.Context, as_json: bool) -> None:
    """List the models running instances serve, those loading, and those the gateway starts
    on the first request (every model of the library, with a saved preset's settings or
    ones the fit estimate chooses), then the aliases. IDs are shown whole at any width."""
    from roundhouse.cli.gateway_view import models_view

    show_from_daemon(ctx, as_json, lambda c: c.gateway_models(), models_view)


@gateway.command("usage")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def usage(ctx: click.Context, as_json: bool) -> None:
    """Per instance: requests and tokens through the gateway, requests in flight and
    queued, when it was last used and when it stops if left idle."""
    from roundhouse.cli.gateway_view import usage_view

    show_from_daemon(ctx, as_json, lambda c: c.gateway_usage(), usage_view)


@gateway.command("routes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def routes(ctx: click.Context, as_json: bool) -> None:
    """Per model: the instances serving it in the order a request tries them (healthy and
    least busy first), each one's circuit (closed, open after failures in a row, half-open
    once a health check passed), its load and context, and the model's fallbacks
    (setting gateway.fallbacks)."""
    from roundhouse.cli.gateway_routes_view import routes_view

    show_from_daemon(ctx, as_json, lambda c: c.gateway_routes(), routes_view)
