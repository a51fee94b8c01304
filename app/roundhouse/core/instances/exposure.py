"""What an engine Roundhouse did not start leaves open, in the words the app and CLI show."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.engines import EngineId
from roundhouse.api.external import AttachSource
from roundhouse.api.instances import InstanceOrigin
from roundhouse.base.hosts import is_loopback_host, key_sent_in_clear

if TYPE_CHECKING:
    from roundhouse.core.instances.entries import InstanceEntry

CORS_NOTE = "and a web page, if it sends CORS headers"


def unprotected_words(entry: InstanceEntry) -> str | None:
    """Why Roundhouse cannot guard an engine it did not start, and what to do; None for the
    engines it runs, which only Roundhouse's own per-instance key opens."""
    if entry.origin != InstanceOrigin.EXTERNAL:
        return None
    if entry.engine == EngineId.EXO:
        # exo takes no key, listens on every address and allows every origin (CORS "*").
        return (
            "Not protected by Roundhouse: exo has no API key, listens on every address of its "
            "machine and answers any web page, so whoever can reach its port can use it. Keep "
            "exo on a network you trust (or its port closed to others in the firewall), and "
            "point apps at Roundhouse's gateway."
        )
    local = is_loopback_host(entry.host)
    if entry.has_key or entry.needs_api_key:
        where = "start the model from Roundhouse instead" if local else "check that it does"
        return (
            "Not protected by Roundhouse: only its own API key guards it, and an engine's key "
            f"often leaves routes besides /v1 open. To have every route guarded, {where}."
        )
    if local:
        return (
            "Not protected by Roundhouse: any program on this machine "
            f"({CORS_NOTE}) can use it. Start the model from Roundhouse instead, or put a key "
            "on it (its --api-key option) and attach its URL with that key."
        )
    return (
        f"Not protected by Roundhouse: whoever can reach {entry.host} ({CORS_NOTE}) can use "
        "it. Put a key on it and attach it again with that key, over https://."
    )


def clear_text_key_warning(url: str) -> str:
    """Why a key kept for a plain http:// endpoint on another machine is at risk."""
    return (
        f"Its API key travels in clear text: {url} is plain http:// to another machine, so "
        "anyone on the network between can read the key and your prompts. Use its https:// "
        "address, or an SSH tunnel to 127.0.0.1, and attach it again."
    )


def entry_warnings(entry: InstanceEntry) -> list[str]:
    """What the user should know about an instance: for now, a key sent in clear text."""
    if (
        entry.found_by == AttachSource.USER_ENDPOINT
        and entry.has_key
        and key_sent_in_clear(entry.base_url)
    ):
        return [clear_text_key_warning(entry.base_url)]
    return []
