"""A stand-in coding agent (`claude`, `codex`, `opencode` on PATH) that records how it ran.

`roundhouse launch` exec's the agent; this one writes its argv, the environment variables
that point agents at a gateway, and its own pid to the JSON file named by `AGENT_RECORD`,
then exits with `AGENT_EXIT` (0 by default), so a test can read exactly what an agent gets.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RECORD_ENV = "AGENT_RECORD"
EXIT_ENV = "AGENT_EXIT"
# Every variable the clients table sets or removes, and one the test plants to see it kept.
WATCHED_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "OPENCODE_", "ROUNDHOUSE_", "KEPT_")

_SCRIPT = """\
#!{python}
import sys
sys.path.insert(0, {root!r})
from tests.fakes.agent_recorder import main
sys.exit(main())
"""
REPO_ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    env = {k: v for k, v in os.environ.items() if k.startswith(WATCHED_PREFIXES)}
    record = {"argv": sys.argv, "env": env, "pid": os.getpid()}
    Path(os.environ[RECORD_ENV]).write_text(json.dumps(record), encoding="utf-8")
    return int(os.environ.get(EXIT_ENV, "0"))


def install_agents(folder: Path, *names: str) -> Path:
    """Executables `folder/<name>` for each agent name; returns `folder` (for PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        script = folder / name
        script.write_text(_SCRIPT.format(python=sys.executable, root=str(REPO_ROOT)))
        script.chmod(0o755)
    return folder


def read_record(path: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return record
