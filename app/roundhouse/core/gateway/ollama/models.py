"""What Ollama's `/api/tags`, `/api/ps` and `/api/show` say of the gateway's models: only what
Roundhouse knows (a GGUF's header, a model folder's config.json, how an instance was
started); a field it does not know is left out, never made up."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.gateway.listing import Listed
from roundhouse.core.knowledge.gguf.reader import read_gguf_header
from roundhouse.core.knowledge.gguf.summary import summarize

log = logging.getLogger(__name__)

# The Ollama release whose API these routes follow (`think`, `/api/embed`, tool calls with
# object arguments): clients that check the version for a feature find it.
OLLAMA_API_VERSION = "0.12.0"
_GGUF_KEYS = ("context_length", "embedding_length", "block_count")


@dataclass(frozen=True)
class Facts:
    """What a model's files say of it."""

    format: str | None = None
    family: str | None = None
    parameter_size: str | None = None
    quantization_level: str | None = None
    size: int | None = None
    modified_at: str | None = None
    model_info: dict[str, Any] = field(default_factory=dict)
    chat_template: str | None = None


def _when(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z")


def _parameters(count: int) -> str:
    """Ollama's way of saying a size: "8.0B", "494.03M"."""
    if count >= 1_000_000_000:
        return f"{count / 1e9:.1f}B"
    return f"{count / 1e6:.2f}M"


@functools.lru_cache(maxsize=256)
def _gguf(path: str, mtime_ns: int, size: int) -> Facts:
    header = read_gguf_header(Path(path))
    summary = summarize(header)
    arch = summary.architecture
    info: dict[str, Any] = {
        "general.architecture": arch,
        "general.parameter_count": summary.parameter_count,
    }
    for key in _GGUF_KEYS:
        value = getattr(summary, key)
        if value is not None:
            info[f"{arch}.{key}"] = value
    return Facts(
        format="gguf",
        family=arch,
        parameter_size=summary.size_label or _parameters(summary.parameter_count),
        quantization_level=summary.quantization,
        size=size,
        modified_at=_when(mtime_ns / 1e9),
        model_info=info,
        chat_template=header.str_value("tokenizer.chat_template"),
    )


@functools.lru_cache(maxsize=256)
def _folder(path: str, mtime_ns: int) -> Facts:
    folder = Path(path)
    files = list(folder.iterdir())
    weights = [f for f in files if f.suffix == ".safetensors"]
    family = None
    info: dict[str, Any] = {}
    config = folder / "config.json"
    if config.is_file():
        parsed = json.loads(config.read_text(encoding="utf-8"))
        if isinstance(parsed, dict) and isinstance(parsed.get("model_type"), str):
            family = parsed["model_type"]
            info["general.architecture"] = family
            if isinstance(parsed.get("max_position_embeddings"), int):
                info[f"{family}.context_length"] = parsed["max_position_embeddings"]
    template = None
    tokenizer = folder / "tokenizer_config.json"
    if tokenizer.is_file():
        parsed = json.loads(tokenizer.read_text(encoding="utf-8"))
        if isinstance(parsed, dict) and isinstance(parsed.get("chat_template"), str):
            template = parsed["chat_template"]
    return Facts(
        format="safetensors" if weights else None,
        family=family,
        size=sum(f.stat().st_size for f in weights) or None,
        modified_at=_when(mtime_ns / 1e9),
        model_info=info,
        chat_template=template,
    )


def facts(model: str | None) -> Facts:
    """What the files at `model` (a GGUF file or a model folder) say; nothing for a repo id
    or a name, or files that cannot be read. Blocking: run it in a thread."""
    if not model:
        return Facts()
    path = Path(model).expanduser()
    try:
        if not path.is_absolute() or not path.exists():
            return Facts()
        stat = path.stat()
        if path.is_file() and path.suffix.lower() == ".gguf":
            return _gguf(str(path), stat.st_mtime_ns, stat.st_size)
        if path.is_dir():
            return _folder(str(path), stat.st_mtime_ns)
    except (OSError, ValueError, RoundhouseError) as exc:
        log.info("No details for %s: %s", model, exc)
    return Facts()


def details(found: Facts) -> dict[str, Any]:
    out: dict[str, Any] = {"parent_model": ""}
    if found.format:
        out["format"] = found.format
    if found.family:
        out["family"] = found.family
        out["families"] = [found.family]
    if found.parameter_size:
        out["parameter_size"] = found.parameter_size
    if found.quantization_level:
        out["quantization_level"] = found.quantization_level
    return out


def _entry(listed: Listed, found: Facts) -> dict[str, Any]:
    name = listed.model.id
    out: dict[str, Any] = {"name": name, "model": name}
    info = listed.instance
    if found.modified_at:
        out["modified_at"] = found.modified_at
    elif info is not None:
        out["modified_at"] = _when(info.started_at)
    if found.size is not None:
        out["size"] = found.size
    # Ollama's digest is its store's blob hash; Roundhouse has none to give.
    out["digest"] = ""
    out["details"] = details(found)
    out["roundhouse"] = {
        "engine": listed.model.engine.value,
        "state": listed.model.state.value,
        "instance": listed.model.instance,
        "alias_of": listed.model.alias_of,
    }
    return out


def tags(listed: list[Listed]) -> dict[str, Any]:
    """`/api/tags`: every model served or startable, aliases included."""
    return {"models": [_entry(entry, facts(entry.model.model)) for entry in listed]}


def ps(listed: list[Listed]) -> dict[str, Any]:
    """`/api/ps`: the models a running instance serves now."""
    out = []
    for entry in listed:
        info = entry.instance
        if info is None or entry.model.state != ModelState.SERVING:
            continue
        row = _entry(entry, facts(entry.model.model))
        if info.rss_bytes is not None:
            row["size"] = info.rss_bytes
        context = _context(info)
        if context is not None:
            row["context_length"] = context
        out.append(row)
    return {"models": out}


def _context(info: InstanceInfo) -> int | None:
    options = info.options
    if options is None:
        return None
    return options.ctx_size or options.max_model_len or None


def _argv(info: InstanceInfo | None) -> list[str]:
    if info is None:
        return []
    return [*info.argv, *(info.options.extra_args if info.options else ())]


def capabilities(entry: Listed, found: Facts) -> list[str]:
    """What the model can be asked for, as far as Roundhouse knows how it runs."""
    info = entry.instance
    argv = _argv(info)
    if "--embeddings" in argv or "--embedding" in argv:
        return ["embedding"]
    out = ["completion"]
    options = info.options if info is not None else None
    engine = entry.model.engine
    template = found.chat_template or ""
    tool_parser = options.tool_parser if options else None
    if engine == EngineId.LLAMA_CPP and (options is None or options.jinja):
        # llama-server's Jinja templates take tools where the model's template does.
        if "tools" in template:
            out.append("tools")
    elif tool_parser and tool_parser != "none":
        out.append("tools")
    reasoning = options.reasoning_parser if options else None
    if reasoning and reasoning != "none":
        out.append("thinking")
    if "--mmproj" in argv or "-mm" in argv:
        out.append("vision")
    return out


def show(entry: Listed) -> dict[str, Any]:
    """`/api/show`: details, model_info and capabilities as far as they are known."""
    found = facts(entry.model.model)
    out: dict[str, Any] = {
        "details": details(found),
        "model_info": dict(found.model_info),
        "capabilities": capabilities(entry, found),
        # Ollama's Modelfile and Go template have no counterpart here.
        "modelfile": "",
        "parameters": "",
        "template": "",
    }
    if found.modified_at:
        out["modified_at"] = found.modified_at
    info = entry.instance
    context = _context(info) if info is not None else None
    if context is not None:
        out["roundhouse"] = {"context_length": context}
    return out
