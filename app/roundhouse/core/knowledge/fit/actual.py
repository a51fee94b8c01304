"""What llama-server allocated, read from the lines it logs while it loads a model.

Per device (llama.cpp's buffer names): the weights (`load_tensors: CUDA0 model buffer
size = ...`; `llm_load_tensors: CUDA0 buffer size` before 2025), the KV cache
(`llama_kv_cache: CPU KV buffer size`, `llama_kv_cache_unified:`, `llama_kv_cache_init:`)
and a recurrent model's state (`RS buffer size`), the compute and output buffers
(`sched_reserve:` / `llama_context: CUDA0 compute buffer size`; early 2024 builds also an
`input` buffer), and the layers offloaded
(`load_tensors: offloaded 33/33 layers to GPU`). Pinned host buffers (`CUDA_Host`) and
mapped or repacked weights (`CPU_Mapped`, `CPU_REPACK`) are RAM.

Silent CPU fallback: a build without GPU support, or one that finds no usable GPU, says
"no usable GPU found, --gpu-layers option will be ignored" (older builds: "not compiled
with GPU offload support") and runs everything on the CPU. Asked-for GPU layers with no
GPU buffer at all, or none offloaded, is reported as `cpu_fallback`.

Recent builds log these lines only at verbosity 4 (`-lv 4`; the default is 3): at a
lower verbosity nothing is found, and the notes say how to get the figures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from roundhouse.api.fit import DeviceKind
from roundhouse.api.instance_memory import DeviceMemoryUse, MemoryUse

_UNITS = {"KiB": 1024, "KB": 1024, "MiB": 1024**2, "MB": 1024**2, "GiB": 1024**3, "GB": 1024**3}
_SIZE = r"=\s*(?P<size>\d+(?:\.\d+)?)\s*(?P<unit>[KMG]i?B)\b"
_BUFFER = re.compile(
    r"(?P<name>\S+)\s+(?P<what>model|KV|RS|compute|output|input)\s+buffer size\s*" + _SIZE
)
# Before 2025: `llm_load_tensors:      CUDA0 buffer size = 5434.38 MiB` (weights).
_OLD_WEIGHTS = re.compile(r"load_tensors:\s+(?P<name>\S+)\s+buffer size\s*" + _SIZE)
_KV_TOTAL = re.compile(r"KV self size\s*" + _SIZE, re.IGNORECASE)
_OFFLOADED = re.compile(r"offloaded (?P<done>\d+)/(?P<total>\d+) layers to GPU")
_CONTEXT = r"(?:llama_context|llama_init_from_model|llama_new_context_with_model):\s+"
_N_CTX = re.compile(_CONTEXT + r"n_ctx\s*=\s*(\d+)")
_N_SEQ = re.compile(_CONTEXT + r"n_seq_max\s*=\s*(\d+)")
_N_UBATCH = re.compile(_CONTEXT + r"n_ubatch\s*=\s*(\d+)")
_FLASH = re.compile(_CONTEXT + r"flash_attn\s*=\s*(\w+)")
_FLASH_RESOLVED = re.compile(r"Flash Attention (?:was auto, set to )?(enabled|disabled)", re.I)
_UNIFIED = re.compile(_CONTEXT + r"kv_unified\s*=\s*(\w+)")
_VERBOSITY = re.compile(r"verbosity = (\d+)")
_GPU_IGNORED = re.compile(r"(no usable GPU found|not compiled with GPU offload support)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEVICE = re.compile(r"^(?P<base>[A-Za-z]+)(?P<index>\d*)$")
_TRUE = {"1", "true", "on", "enabled", "yes"}
_FALSE = {"0", "false", "off", "disabled", "no"}
# Buffer names of memory in RAM however the backend calls it.
_HOST_SUFFIXES = {"Host", "Mapped", "REPACK", "AARCH64"}


@dataclass(frozen=True)
class LoadFacts:
    """How the engine ran the model, where its options left it to the engine."""

    n_ctx: int | None = None
    n_seq: int | None = None
    n_ubatch: int | None = None
    flash_attention: bool | None = None
    kv_unified: bool | None = None
    verbosity: int | None = None
    gpu_ignored: str | None = None


@dataclass(frozen=True)
class LoadReport:
    """The figures (None when the log had none) and the facts of one load."""

    use: MemoryUse | None
    facts: LoadFacts


@dataclass
class _Device:
    name: str
    kind: DeviceKind
    index: int | None
    weights: int = 0
    kv: int = 0
    compute: int = 0


@dataclass
class _Reader:
    devices: dict[str, _Device] = field(default_factory=dict)
    kv_total: int | None = None
    offloaded: int | None = None
    total_layers: int | None = None
    facts: dict[str, int | bool | str] = field(default_factory=dict)

    def read(self, raw: str) -> None:
        line = _ANSI.sub("", raw)
        if "buffer size" in line:
            self._buffer(line)
        elif "KV self size" in line or "kv self size" in line:
            found = _KV_TOTAL.search(line)
            if found:
                self.kv_total = _bytes(found)
        elif found := _OFFLOADED.search(line):
            self.offloaded, self.total_layers = int(found["done"]), int(found["total"])
        else:
            self._fact(line)

    def _buffer(self, line: str) -> None:
        found = _BUFFER.search(line)
        what = found["what"] if found else None
        if found is None:
            found = _OLD_WEIGHTS.search(line)
            what = "model"
        if found is None:
            return
        device = self._device(found["name"])
        size = _bytes(found)
        if what == "model":
            device.weights += size
        elif what in ("KV", "RS"):
            device.kv += size
        else:
            device.compute += size

    def _device(self, buffer: str) -> _Device:
        base, _, suffix = buffer.partition("_")
        if base == "CPU" or (suffix in _HOST_SUFFIXES and not _is_gpu_mapping(base, suffix)):
            key, kind, index = "CPU", DeviceKind.CPU, None
        else:
            parts = _DEVICE.match(base)
            number = parts["index"] if parts else ""
            key, kind, index = base, DeviceKind.GPU, int(number) if number else 0
        if key not in self.devices:
            self.devices[key] = _Device(key, kind, index)
        return self.devices[key]

    def _fact(self, line: str) -> None:
        for name, pattern in (("n_ctx", _N_CTX), ("n_seq", _N_SEQ), ("n_ubatch", _N_UBATCH)):
            if found := pattern.search(line):
                self.facts[name] = int(found[1])
                return
        if found := _FLASH.search(line) or _FLASH_RESOLVED.search(line):
            flag = _flag(found[1])
            if flag is not None:
                self.facts["flash"] = flag
        elif found := _UNIFIED.search(line):
            flag = _flag(found[1])
            if flag is not None:
                self.facts["unified"] = flag
        elif found := _VERBOSITY.search(line):
            self.facts["verbosity"] = int(found[1])
        elif found := _GPU_IGNORED.search(line):
            self.facts["gpu_ignored"] = line.strip().removeprefix("warning: ")


def _is_gpu_mapping(base: str, suffix: str) -> bool:
    """Metal maps the file into the GPU's memory (`Metal_Mapped`, `MTL0_Mapped`): a GPU's."""
    return suffix == "Mapped" and (base == "Metal" or base.startswith("MTL"))


def _bytes(found: re.Match[str]) -> int:
    return round(float(found["size"]) * _UNITS[found["unit"]])


def _flag(word: str) -> bool | None:
    word = word.lower()
    return True if word in _TRUE else False if word in _FALSE else None


def parse_llama_server_load(
    lines: Iterable[str], *, requested_layers: int | None = None
) -> LoadReport:
    """The buffers and facts in llama-server's output; `requested_layers`: the -ngl asked
    for (None when left to the engine), to tell a silent fallback to the CPU."""
    reader = _Reader()
    for line in lines:
        reader.read(line)
    f = reader.facts
    facts = LoadFacts(
        n_ctx=_int(f.get("n_ctx")),
        n_seq=_int(f.get("n_seq")),
        n_ubatch=_int(f.get("n_ubatch")),
        flash_attention=_bool(f.get("flash")),
        kv_unified=_bool(f.get("unified")),
        verbosity=_int(f.get("verbosity")),
        gpu_ignored=str(f["gpu_ignored"]) if "gpu_ignored" in f else None,
    )
    return LoadReport(_use(reader, facts, requested_layers), facts)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _use(reader: _Reader, facts: LoadFacts, requested: int | None) -> MemoryUse | None:
    if not reader.devices and reader.kv_total is None:
        return None
    # The GPUs in llama.cpp's order, then the RAM.
    ordered = sorted(reader.devices.values(), key=lambda d: (d.kind == DeviceKind.CPU, d.name))
    devices = [
        DeviceMemoryUse(
            device=d.name,
            kind=d.kind,
            index=d.index,
            weights_bytes=d.weights,
            kv_bytes=d.kv,
            compute_bytes=d.compute,
            total_bytes=d.weights + d.kv + d.compute,
        )
        for d in ordered
    ]
    notes: list[str] = []
    kv = sum(d.kv_bytes for d in devices)
    if not kv and reader.kv_total:
        kv = reader.kv_total
        notes.append("The engine gave the KV cache only as a total, not per device.")
    weights = sum(d.weights_bytes for d in devices)
    compute = sum(d.compute_bytes for d in devices)
    fallback = _fallback(devices, reader, facts, requested, notes)
    return MemoryUse(
        devices=devices,
        weights_bytes=weights,
        kv_bytes=kv,
        compute_bytes=compute,
        total_bytes=weights + kv + compute,
        offloaded_layers=reader.offloaded,
        total_layers=reader.total_layers,
        requested_layers=requested,
        cpu_fallback=fallback,
        notes=notes,
    )


def _fallback(
    devices: list[DeviceMemoryUse],
    reader: _Reader,
    facts: LoadFacts,
    requested: int | None,
    notes: list[str],
) -> bool:
    """Whether asked-for GPU layers all ended on the CPU; a shortfall goes in the notes."""
    on_gpu = any(d.kind == DeviceKind.GPU and d.weights_bytes for d in devices)
    if not requested or requested <= 0:
        return False
    if reader.offloaded == 0 or (reader.offloaded is None and not on_gpu):
        why = f" ({facts.gpu_ignored})" if facts.gpu_ignored else ""
        notes.append(
            f"{requested} layers were asked for on the GPU, but llama-server put none there"
            f"{why}: it runs on the CPU only. On a machine with a GPU, install a llama.cpp "
            "build for it (`roundhouse engines install llama.cpp`) or check its driver."
        )
        return True
    wanted = min(requested, reader.total_layers) if reader.total_layers else requested
    if reader.offloaded is not None and reader.offloaded < wanted:
        notes.append(
            f"Only {reader.offloaded} of the {wanted} layers asked for went to the GPU; the "
            "rest run on the CPU, slower."
        )
    return False
