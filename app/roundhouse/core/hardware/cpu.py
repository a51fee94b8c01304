"""The CPU: brand, architecture, cores and the instruction sets that decide engine builds."""

from __future__ import annotations

from roundhouse.api.hardware import CpuInfo
from roundhouse.core.hardware.host import HostReader, normalize_arch

X86_FEATURES = ("avx", "avx2", "avx512f", "f16c", "fma")
ARM_FEATURES = ("neon", "dotprod")

# /proc/cpuinfo of 64-bit ARM has no "model name"; its "CPU part" names the core.
_ARM_PARTS = {
    ("0x41", "0xd03"): "ARM Cortex-A53",
    ("0x41", "0xd05"): "ARM Cortex-A55",
    ("0x41", "0xd08"): "ARM Cortex-A72",
    ("0x41", "0xd0b"): "ARM Cortex-A76",
    ("0x41", "0xd0c"): "ARM Neoverse-N1",
    ("0x41", "0xd40"): "ARM Neoverse-V1",
    ("0x41", "0xd4f"): "ARM Neoverse-V2",
    ("0x41", "0xd41"): "ARM Cortex-A78",
    ("0x61", "0x022"): "Apple M1 (Icestorm)",
    ("0x61", "0x023"): "Apple M1 (Firestorm)",
}

# kernel32.IsProcessorFeaturePresent ids (winnt.h PF_*).
PF_AVX_INSTRUCTIONS_AVAILABLE = 39
PF_AVX2_INSTRUCTIONS_AVAILABLE = 40
PF_AVX512F_INSTRUCTIONS_AVAILABLE = 41
PF_ARM_V8_INSTRUCTIONS_AVAILABLE = 29
PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE = 43


def read_cpu(host: HostReader) -> CpuInfo:
    """The CPU as the host reports it; features it cannot tell go in features_unknown."""
    arch = normalize_arch(host.machine)
    if host.system == "Darwin":
        brand, features, unknown = _darwin(host, arch)
    elif host.system == "Windows":
        brand, features, unknown = _windows(host, arch)
    else:
        brand, features, unknown = _linux(host, arch)
    logical = host.cpu_count(True) or _count_processors(host) or 1
    return CpuInfo(
        brand=brand or "unknown CPU",
        arch=arch,
        physical_cores=host.cpu_count(False),
        logical_cores=logical,
        features=features,
        features_unknown=unknown,
    )


def parse_cpuinfo(text: str) -> dict[str, str]:
    """The first processor block of /proc/cpuinfo, plus machine-wide trailing fields."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    return fields


def linux_features(fields: dict[str, str], arch: str) -> list[str]:
    if arch == "x86_64":
        flags = set(fields.get("flags", "").split())
        return [f for f in X86_FEATURES if f in flags]
    names = set(fields.get("Features", "").split())
    found: list[str] = []
    # arm64 kernels say "asimd" for NEON; 32-bit ARM kernels say "neon".
    if names & {"asimd", "neon"}:
        found.append("neon")
    if "asimddp" in names:
        found.append("dotprod")
    return found


def _linux(host: HostReader, arch: str) -> tuple[str | None, list[str], list[str]]:
    text = host.read_text("/proc/cpuinfo")
    if text is None:
        wanted = X86_FEATURES if arch == "x86_64" else ARM_FEATURES
        return _lscpu_brand(host), [], list(wanted)
    fields = parse_cpuinfo(text)
    brand = fields.get("model name")
    if not brand or brand.startswith("ARMv"):
        part = _ARM_PARTS.get((fields.get("CPU implementer", ""), fields.get("CPU part", "")))
        board = fields.get("Model")
        brand = " ".join(x for x in (part, f"({board})" if board else None) if x) or brand
    return brand or fields.get("Hardware") or _lscpu_brand(host), linux_features(fields, arch), []


def _lscpu_brand(host: HostReader) -> str | None:
    for line in (host.run(["lscpu"]) or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name" and value.strip() not in ("", "-"):
            return value.strip()
    return None


def _count_processors(host: HostReader) -> int | None:
    if host.system == "Darwin":
        for name in ("hw.logicalcpu", "hw.ncpu"):
            out = _sysctl(host, name) or ""
            if out.isdigit():
                return int(out)
        return None
    if host.system != "Linux":
        return None
    text = host.read_text("/proc/cpuinfo") or ""
    count = sum(1 for line in text.splitlines() if line.split(":")[0].strip() == "processor")
    return count or None


def _sysctl(host: HostReader, name: str) -> str | None:
    out = host.run(["sysctl", "-n", name])
    return out.strip() if out and out.strip() else None


def _darwin(host: HostReader, arch: str) -> tuple[str | None, list[str], list[str]]:
    brand = _sysctl(host, "machdep.cpu.brand_string")
    if arch == "arm64" or _sysctl(host, "hw.optional.arm64") == "1":
        found: list[str] = []
        unknown: list[str] = []
        # Apple documents hw.optional.AdvSIMD, but macOS answers hw.optional.arm.AdvSIMD
        # (google/cpu_features#390); older releases only have hw.optional.neon.
        simd = [
            _sysctl(host, n)
            for n in ("hw.optional.arm.AdvSIMD", "hw.optional.AdvSIMD", "hw.optional.neon")
        ]
        if "1" in simd:
            found.append("neon")
        elif all(s is None for s in simd):
            unknown.append("neon")
        dot = _sysctl(host, "hw.optional.arm.FEAT_DotProd")
        if dot == "1":
            found.append("dotprod")
        elif dot is None:
            unknown.append("dotprod")
        return brand, found, unknown
    # Intel Macs: AVX2 and AVX-512 are listed in leaf7_features, not in cpu.features.
    words = set((_sysctl(host, "machdep.cpu.features") or "").upper().split())
    words |= set((_sysctl(host, "machdep.cpu.leaf7_features") or "").upper().split())
    if not words:
        return brand, [], list(X86_FEATURES)
    names = {"avx": "AVX1.0", "avx2": "AVX2", "avx512f": "AVX512F", "f16c": "F16C", "fma": "FMA"}
    return brand, [f for f in X86_FEATURES if names[f] in words], []


def _windows(host: HostReader, arch: str) -> tuple[str | None, list[str], list[str]]:
    values = host.registry_values(r"HKLM\HARDWARE\DESCRIPTION\System\CentralProcessor\0") or {}
    name = values.get("ProcessorNameString")
    brand = name.strip() if isinstance(name, str) else None
    if arch == "arm64":
        probes = {
            "neon": PF_ARM_V8_INSTRUCTIONS_AVAILABLE,
            "dotprod": PF_ARM_V82_DP_INSTRUCTIONS_AVAILABLE,
        }
        wanted: tuple[str, ...] = ARM_FEATURES
    else:
        probes = {
            "avx": PF_AVX_INSTRUCTIONS_AVAILABLE,
            "avx2": PF_AVX2_INSTRUCTIONS_AVAILABLE,
            "avx512f": PF_AVX512F_INSTRUCTIONS_AVAILABLE,
        }
        wanted = X86_FEATURES
    found: list[str] = []
    unknown: list[str] = []
    for feature in wanted:
        answer = host.processor_feature(probes[feature]) if feature in probes else None
        if answer:
            found.append(feature)
        elif answer is None:
            # f16c and fma have no PF_ id; older Windows lacks the AVX ids too.
            unknown.append(feature)
    return brand, found, unknown
