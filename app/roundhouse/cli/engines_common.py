"""What the `roundhouse engines ...` commands share: engine ids, and instance ids by prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roundhouse.client import DaemonClient

ENGINE_IDS = ("llama.cpp", "ollama", "mlx", "vllm", "sglang")


async def resolve_id(client: DaemonClient, wanted: str) -> str:
    """The instance id that `wanted` is, or the only one it begins."""
    from roundhouse.cli.output import fail

    ids = [i.id for i in (await client.instances()).instances]
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        fail(f"No instance has the id {wanted!r}. List them with `roundhouse engines ps`.")
    fail(f"{wanted!r} begins several instance ids ({', '.join(matches)}): give more of it.")
