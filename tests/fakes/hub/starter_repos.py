"""The first-run guide's starter repos for the Hub stand-in, under the catalog's own names.

`build_starter_repos(root)` writes, for every GGUF starter of resources/models/starters.toml,
`<repo>/<file>`: the tiny test Llama (tests/fixtures/models) with `general.file_type` set to
the starter's quantization, so the guide's real catalog path is exercised (the Hub page
groups it, the fit reads its header over Range, the queue downloads it, llama-server loads
it in a second). Each repo has a README card and hub.json gives it downloads and dates.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gguf
import pytest

from roundhouse.core.guide.catalog import load_starters
from tests.fakes.hub import HubStandin, hub_env, running_hub
from tests.fakes.hub.build import copy_gguf, write_card, write_manifest
from tests.fixtures.models.tiny_llama import write_tiny_llama_gguf

_FILE_TYPES = {"Q4_K_M": gguf.LlamaFileType.MOSTLY_Q4_K_M, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}


def starter_gguf_repos() -> list[tuple[str, str, str]]:
    """(repo, file, quantization) of each GGUF starter, smallest first."""
    catalog = load_starters()
    return [(s.gguf.repo, s.gguf.file, s.gguf.quant) for s in catalog.starter if s.gguf]


def build_starter_repos(root: Path, only: int | None = None, manifest: bool = True) -> Path:
    """Write the starters' repos (the first `only` of them, or all) under `root`, and
    hub.json unless `manifest` is False (beside another set of repos, keep theirs)."""
    root.mkdir(parents=True, exist_ok=True)
    plain = root / ".tiny.tmp"
    write_tiny_llama_gguf(plain, seed=0)
    metas = {}
    for day, (repo, file, quant) in enumerate(starter_gguf_repos()[:only], start=1):
        folder = root / repo
        folder.mkdir(parents=True, exist_ok=True)
        copy_gguf(plain, folder / file, _FILE_TYPES[quant])
        card = {
            "license": "apache-2.0",
            "pipeline_tag": "text-generation",
            "tags": ["gguf", "conversational"],
            "quantized_by": "roundhouse-test",
        }
        write_card(folder, card, repo.split("/")[1])
        metas[repo] = {"downloads": 1000 * day, "likes": day, "day": day}
    plain.unlink()
    if manifest:
        write_manifest(root, metas, {})
    return root


@pytest.fixture(scope="session")
def starter_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubStandin]:
    """A Hub stand-in serving the starters' repos, for the session; reset before each use."""
    repos = build_starter_repos(tmp_path_factory.mktemp("starter-hub") / "repos")
    with running_hub(repos) as hub:
        yield hub


def starter_env(hub: HubStandin, llama_server: Path | None, folder: Path) -> dict[str, str]:
    """A daemon's environment: this Hub, llama-server on PATH (when given), a Hugging Face
    cache and a keyring in `folder`, and no Ollama (nothing answers at its address)."""
    from tests.daemon_process import path_with
    from tests.processes import free_port
    from tests.support.standins import keyring_env

    hub.reset()
    return {
        **hub_env(hub),
        **keyring_env(folder),
        **(path_with(llama_server) if llama_server is not None else {}),
        "HF_HOME": str(folder / "hf"),
        "OLLAMA_HOST": f"127.0.0.1:{free_port()}",
    }
