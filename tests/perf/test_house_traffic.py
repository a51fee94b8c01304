"""The app's traffic and idle cost before and after a change, in one run: requests per chat
turn, and per page the app's and the daemon's CPU and the app's requests per minute.

The tree before is a git worktree of $HOUSE_BASE (default: the commit before issue 17's work);
both trees are driven by the same script (house_driver.py) against their own counting daemon
with the real llama-server serving the tiny model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

REPO = Path(__file__).resolve().parents[2]
BASE = os.environ.get("HOUSE_BASE", "da6f0f6")
# The tree after: this checkout, or a worktree of $HOUSE_AFTER (a commit) while work goes on here.
AFTER = os.environ.get("HOUSE_AFTER")


def _drive(tree: Path, root: Path, binary: Path, model: Path) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree / "app"),
        "QT_QPA_PLATFORM": "offscreen",
        "HOUSE_WINDOW_S": os.environ.get("HOUSE_WINDOW_S", "30"),
    }
    driver = Path(__file__).parent / "house_driver.py"
    done = subprocess.run(
        [sys.executable, str(driver), str(root), str(binary), str(model)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@pytest.mark.perf
@pytest.mark.timeout(2400)
def test_house_traffic_before_and_after(
    tmp_path: Path, llama_server_binary: Path, report: Any
) -> None:
    trees = {"before": (tmp_path / "base", BASE)}
    if AFTER:
        trees["after"] = (tmp_path / "after", AFTER)
    for tree, rev in trees.values():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "-q", str(tree), rev], check=True
        )
    try:
        model = write_tiny_llama_gguf(tmp_path / "tiny.gguf", seed=0)
        before = _drive(trees["before"][0], tmp_path / "home-before", llama_server_binary, model)
        after_tree = trees["after"][0] if AFTER else REPO
        after = _drive(after_tree, tmp_path / "home-after", llama_server_binary, model)
    finally:
        for tree, _ in trees.values():
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)])
    for when, figures in (("before", before), ("after", after)):
        report.add(f"{when} requests per chat turn (new)", figures["chat_turn_new"]["requests"])
        report.add(
            f"{when} requests per chat turn (existing)", figures["chat_turn_existing"]["requests"]
        )
        for page, cost in figures["pages"].items():
            report.add(f"{when} {page}", {k: v for k, v in cost.items() if k != "paths"})
    report.add("after paths per page", {p: c["paths"] for p, c in after["pages"].items()})
    report.add("after chat turn paths", after["chat_turn_new"]["paths"])
