"""Shared console output: JSON for scripts, readable text for people, errors in words."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from pydantic import BaseModel
from rich.console import Console

console = Console()
err_console = Console(stderr=True, soft_wrap=True)


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = json.dumps(value, indent=2)
    sys.stdout.write(text + "\n")


def fail(message: str, code: int = 1) -> NoReturn:
    err_console.print(f"[bold red]Error:[/] {message}", highlight=False)
    raise SystemExit(code)
