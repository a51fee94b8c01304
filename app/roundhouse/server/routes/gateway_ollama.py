"""The gateway's ollama API surface (routes filled in by the work on issue 15)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["gateway"])
