"""Fit estimates for named models: a Hub repository's file choice or a library model.

A GGUF choice on the Hub is measured from its header, read over HTTP Range (a few MB,
never the weights); other choices of the same repository take that shape with their own
weight sizes. Safetensors and MLX come from config.json. Shapes are cached per commit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
from huggingface_hub import hf_hub_url

from roundhouse.api.engines import ModelFormat
from roundhouse.api.fit import FitQuery, FitVerdict, ModelFit
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.hub import HubModelDetails, HubModelKind, QuantGroup
from roundhouse.api.library import LibraryModel, LibrarySource
from roundhouse.core.errors import InvalidInputError, NotFoundError
from roundhouse.core.knowledge.fit import estimate_fit
from roundhouse.core.knowledge.fit.actual import LoadFacts
from roundhouse.core.knowledge.gguf import (
    GgufHeader,
    read_gguf_header,
    read_gguf_header_url,
    shape_from_gguf,
)
from roundhouse.core.knowledge.hf_config import shape_from_hf_config
from roundhouse.core.knowledge.run_options import fit_options
from roundhouse.core.knowledge.shape import ModelShape, WeightFormat
from roundhouse.core.models.fit_capabilities import capability_costs
from roundhouse.core.models.fit_projector import projector_cost
from roundhouse.core.models.hub.service import HubService
from roundhouse.core.models.library.service import LibraryService

_CACHE_SIZE = 256
_FITS_ON_GPU = frozenset({FitVerdict.FULL_GPU})


class ModelFitter:
    def __init__(
        self,
        hub: HubService,
        library: LibraryService,
        hardware: Callable[[], Awaitable[HardwareInventory]],
    ) -> None:
        self._hub = hub
        self._library = library
        self._hardware = hardware
        self._shapes: OrderedDict[tuple[str, ...], ModelShape] = OrderedDict()

    async def fit(self, query: FitQuery) -> ModelFit:
        hardware = await self._hardware()
        if query.library_id is not None or query.path is not None:
            model = (
                await self._library.get(query.library_id)
                if query.library_id is not None
                else await asyncio.to_thread(_as_model, query.path or "")
            )
            key = ("lib", model.path or model.id, str(model.size_bytes))
            shape = await self._cached(key, self._local, model)
            options = query.options
            notes: list[str] = []
            if query.instance is not None:
                options = fit_options(query.instance, LoadFacts(), shape)
                options, notes = await capability_costs(
                    query.instance, options, shape, model, self._draft_shape
                )
            # A vision model's projector loads with it (ADR 45).
            options, seen = await projector_cost(query.instance, options, model)
            notes += seen
            report = estimate_fit(shape, hardware, options)
            if notes:
                report = report.model_copy(update={"assumptions": [*report.assumptions, *notes]})
            return ModelFit(target=model.name, size_bytes=model.size_bytes, report=report)
        assert query.repo is not None
        page = await self._hub.details(query.repo, query.revision)
        if not page.groups:
            raise NotFoundError(f"{page.id} has no model files local engines can run.")
        base = await self._cached(
            ("hub", page.id, page.commit or query.revision), self._hub_shape, page
        )
        groups = page.groups
        if query.group is not None:
            groups = [g for g in page.groups if g.name.casefold() == query.group.casefold()]
            if not groups:
                names = ", ".join(g.name for g in page.groups)
                raise NotFoundError(f"{page.id} has no {query.group}: choose one of {names}.")
        fits = [(g, estimate_fit(_resized(base, g), hardware, query.options)) for g in groups]
        on_gpu = [pair for pair in fits if pair[1].verdict in _FITS_ON_GPU]
        # The largest choice that runs fully on the GPU(s) is the best quality that is fast;
        # without one, the smallest is the likeliest to run at all.
        group, report = (
            max(on_gpu, key=lambda p: p[0].size) if on_gpu else min(fits, key=lambda p: p[0].size)
        )
        return ModelFit(
            target=f"{page.id} {group.name}", group=group.name, size_bytes=group.size, report=report
        )

    async def _cached(
        self, key: tuple[str, ...], make: Callable[..., Awaitable[ModelShape]], *args: object
    ) -> ModelShape:
        shape = self._shapes.get(key)
        if shape is None:
            shape = await make(*args)
            self._shapes[key] = shape
            while len(self._shapes) > _CACHE_SIZE:
                self._shapes.popitem(last=False)
        self._shapes.move_to_end(key)
        return shape

    async def _hub_shape(self, page: HubModelDetails) -> ModelShape:
        """The shape of the repo's smallest choice (the same model at every quantization)."""
        group = min(page.groups, key=lambda g: g.size)
        token = await self._hub.token()
        headers = {"authorization": f"Bearer {token}"} if token else {}
        revision = page.commit or page.revision
        async with httpx.AsyncClient(follow_redirects=True, timeout=30.0) as client:

            def url(path: str) -> str:
                return hf_hub_url(page.id, path, revision=revision, endpoint=self._hub.endpoint)

            if group.kind == HubModelKind.GGUF:
                parts = [f.path for f in group.files if f.path.endswith(".gguf")]
                headers_read = [await read_gguf_header_url(client, url(p), headers) for p in parts]
                return shape_from_gguf(_merged(headers_read))
            response = await client.get(url("config.json"), headers=headers)
            if response.status_code != 200:
                raise NotFoundError(f"{page.id} has no readable config.json to size it from.")
            config = _config(response.content, page.id)
        fmt = WeightFormat.MLX if group.kind == HubModelKind.MLX else WeightFormat.SAFETENSORS
        weights = sum(f.size for f in group.files if f.path.endswith(".safetensors"))
        return shape_from_hf_config(config, weights, fmt, group.quantization)

    async def _draft_shape(self, path: str) -> ModelShape:
        model = await asyncio.to_thread(_as_model, path)
        return await self._cached(
            ("lib", model.path or model.id, str(model.size_bytes)), self._local, model
        )

    async def _local(self, model: LibraryModel) -> ModelShape:
        if model.format == ModelFormat.GGUF:
            parts = [p for p in (model.paths or [model.path or ""]) if p.endswith(".gguf")]
            if not parts:
                raise InvalidInputError(f"{model.name} has no GGUF file to size it from.")
            read = await asyncio.gather(
                *(asyncio.to_thread(read_gguf_header, Path(p)) for p in parts)
            )
            return shape_from_gguf(_merged(list(read)))
        if model.format in (ModelFormat.SAFETENSORS, ModelFormat.MLX) and model.path:
            raw = await asyncio.to_thread(_read_config, Path(model.path))
            fmt = WeightFormat.MLX if model.format == ModelFormat.MLX else WeightFormat.SAFETENSORS
            return shape_from_hf_config(
                _config(raw, model.name), model.size_bytes, fmt, model.quantization
            )
        raise InvalidInputError(
            f"{model.name} is a {model.format.value} model: its engine sizes it itself."
        )


def _as_model(path: str) -> LibraryModel:
    """A file or folder named by the user, as the library would describe it."""
    where = Path(path).expanduser()
    if not where.exists():
        raise NotFoundError(f"There is no {where}: give the path of a GGUF file or model folder.")
    if where.is_dir():
        has_mlx = any(where.glob("*.safetensors")) and "mlx" in where.name.lower()
        size = sum(f.stat().st_size for f in where.glob("*.safetensors"))
        fmt = ModelFormat.MLX if has_mlx else ModelFormat.SAFETENSORS
        return LibraryModel(
            id=str(where),
            name=where.name,
            source=LibrarySource.FOLDER,
            format=fmt,
            path=str(where),
            size_bytes=size,
        )
    return LibraryModel(
        id=str(where),
        name=where.name,
        source=LibrarySource.FOLDER,
        format=ModelFormat.GGUF,
        path=str(where),
        paths=[str(where)],
        size_bytes=where.stat().st_size,
    )


def _merged(headers: list[GgufHeader]) -> GgufHeader:
    """A split GGUF as one header: the first part's metadata, every part's tensors."""
    first = headers[0]
    tensors = tuple(t for h in headers for t in h.tensors)
    return dataclasses.replace(first, tensors=tensors)


def _resized(shape: ModelShape, group: QuantGroup) -> ModelShape:
    """The same model at another quantization: its weights scaled to that choice's files."""
    weights = sum(f.size for f in group.files if f.path.endswith((".gguf", ".safetensors")))
    if weights <= 0 or shape.weight_bytes <= 0 or weights == shape.weight_bytes:
        return shape
    scale = weights / shape.weight_bytes
    return dataclasses.replace(
        shape,
        layer_bytes=tuple(int(b * scale) for b in shape.layer_bytes),
        expert_bytes=tuple(int(b * scale) for b in shape.expert_bytes),
        other_bytes=int(shape.other_bytes * scale),
        quantization=group.quantization or shape.quantization,
    )


def _read_config(path: Path) -> bytes:
    folder = path if path.is_dir() else path.parent
    return (folder / "config.json").read_bytes()


def _config(raw: bytes, name: str) -> dict[str, object]:
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"{name}: config.json is not valid JSON ({exc}).") from exc
    if not isinstance(config, dict):
        raise InvalidInputError(f"{name}: config.json is not a JSON object.")
    return config
