"""The daemon's composition root: every service exists from the start, and the model services'
libraries stay out of the import the daemon's start waits for (they open in a thread)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from roundhouse.server.services import DaemonServices

# What a daemon's start must not import before it answers: the model services and the
# libraries they pull in (huggingface_hub's API, the Hub client).
LATE = (
    "roundhouse.core.models.library.service",
    "roundhouse.core.models.hub.service",
    "roundhouse.core.models.downloads.service",
    "roundhouse.core.models.ollama_pulls.service",
    "huggingface_hub.hf_api",
)


def test_the_daemon_imports_no_model_service_before_it_answers() -> None:
    probe = (
        "import sys, roundhouse.server.daemon; "
        f"print(','.join(m for m in {LATE!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"imported at start: {done.stdout.strip()}"


def test_every_service_is_a_field_the_composition_root_must_give() -> None:
    # No optional service and no default: a service the root forgot fails at the start,
    # not at a route's first request.
    for field in dataclasses.fields(DaemonServices):
        if field.name in ("started_at",):
            continue
        assert field.default is dataclasses.MISSING, field.name
        assert field.default_factory is dataclasses.MISSING, field.name
        # The annotations are strings (postponed): `X | None` would read so.
        assert "None" not in str(field.type).replace(" ", "").split("|"), field.name
