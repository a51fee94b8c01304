"""Map every error to an RFC 9457 problem+json response with a human message."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from roundhouse.api.daemon import Problem
from roundhouse.core.errors import RoundhouseError

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"


def problem_response(
    status: int, title: str, detail: str, instance: str | None = None
) -> JSONResponse:
    body = Problem(title=title, status=status, detail=detail, instance=instance)
    return JSONResponse(
        body.model_dump(exclude_none=True), status_code=status, media_type=PROBLEM_MEDIA_TYPE
    )


def install_problem_handlers(app: FastAPI) -> None:
    async def on_roundhouse_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RoundhouseError)
        return problem_response(exc.status, exc.title, exc.detail, request.url.path)

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        titles = {401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Not allowed"}
        response = problem_response(
            exc.status_code, titles.get(exc.status_code, "Error"), detail, request.url.path
        )
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            parts.append(f"{where}: {err.get('msg', 'invalid')}" if where else err["msg"])
        return problem_response(
            422, "Invalid request", "; ".join(parts) or "The request is invalid.", request.url.path
        )

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("Unhandled error on %s %s", request.method, request.url.path)
        return problem_response(
            500,
            "Internal error",
            f"The daemon failed unexpectedly ({type(exc).__name__}: {exc}). "
            "The daemon log has the details.",
            request.url.path,
        )

    app.add_exception_handler(RoundhouseError, on_roundhouse_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(Exception, on_unexpected)
