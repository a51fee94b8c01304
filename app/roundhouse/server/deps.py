"""FastAPI dependencies: the services object and the token check."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from roundhouse.server.security import token_matches
from roundhouse.server.services import DaemonServices


async def get_services(request: Request) -> DaemonServices:
    # async, like every dependency here: FastAPI runs a plain `def` in its thread pool, a
    # thread hop per request for what is one attribute read.
    services: DaemonServices = request.app.state.services
    return services


Services = Annotated[DaemonServices, Depends(get_services)]


async def require_token(request: Request, services: Services) -> None:
    if not token_matches(request.headers.get("authorization"), services.token):
        raise HTTPException(
            status_code=401,
            detail="A valid token is required: send 'Authorization: Bearer <token>' with the "
            f"token from {services.home.token_file}.",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def models_open(services: Services) -> None:
    """Routes of the model services wait until those are open (just after the start)."""
    await services.models_ready()


ModelsOpen = Depends(models_open)
