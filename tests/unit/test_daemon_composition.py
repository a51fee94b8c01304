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


def _printed(probe: str) -> str:
    """What `probe` prints, run by a fresh interpreter (its own sys.modules)."""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_daemon_imports_no_model_service_before_it_answers() -> None:
    probe = (
        "import sys, roundhouse.server.daemon; "
        f"print(','.join(m for m in {LATE!r} if m in sys.modules))"
    )
    found = _printed(probe)
    assert found == "", f"imported at start: {found}"


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


# What an idle daemon must not hold (its idle memory budget): numpy and the gguf package's
# writer and tokenizer tools (with PyYAML's and mistral_common's), which only a benchmark
# or a header with a string array needs.
HEAVY = ("numpy", "gguf", "mistral_common")


def test_an_idle_daemon_with_its_model_services_holds_no_numeric_library() -> None:
    probe = (
        "import sys, roundhouse.server.daemon, roundhouse.server.models_wiring as w; "
        "w._import_models(); import roundhouse.core.knowledge.gguf, roundhouse.core.bench.ab; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    found = _printed(probe)
    assert found == "", f"imported while idle: {found}"


def test_gguf_imported_later_shares_the_constants_the_reader_loaded() -> None:
    # The reader loads gguf's constants alone; a test or the converter importing the whole
    # package afterwards must get the same enums, not a second copy.
    probe = (
        "from roundhouse.core.knowledge.gguf.constants import GGUFValueType, Keys; import gguf; "
        "print(gguf.GGUFValueType is GGUFValueType and gguf.Keys is Keys, "
        "gguf.GGUFValueType.STRING == 8)"
    )
    assert _printed(probe).split() == ["True", "True"]
