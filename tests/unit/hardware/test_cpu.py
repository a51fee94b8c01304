"""CPU brand and engine-deciding features, parsed from each platform's recorded outputs."""

from __future__ import annotations

from roundhouse.core.hardware.cpu import read_cpu
from tests.unit.hardware.conftest import machine


def test_local_epyc_cpuinfo_has_avx512() -> None:
    cpu = read_cpu(machine("linux-epyc-local"))
    assert cpu.brand == "AMD EPYC"
    assert cpu.arch == "x86_64"
    assert cpu.features == ["avx", "avx2", "avx512f", "f16c", "fma"]
    assert cpu.features_unknown == []
    assert cpu.logical_cores == 2  # two "processor" blocks were recorded


def test_ivy_bridge_xeon_has_avx_but_not_avx2() -> None:
    cpu = read_cpu(machine("linux-xeon-e7-v2"))
    assert cpu.brand == "Intel(R) Xeon(R) CPU E7-4820 v2 @ 2.00GHz"
    assert cpu.features == ["avx", "f16c"]


def test_raspberry_pi_5_has_neon_and_dotprod() -> None:
    cpu = read_cpu(machine("linux-rpi5"))
    assert cpu.arch == "arm64"
    assert cpu.brand == "ARM Cortex-A76 (Raspberry Pi 5 Model B Rev 1.0)"
    assert cpu.features == ["neon", "dotprod"]
    assert cpu.logical_cores == 4


def test_raspberry_pi_4_has_neon_only() -> None:
    cpu = read_cpu(machine("linux-rpi4"))
    assert cpu.brand == "ARM Cortex-A72 (Raspberry Pi 4 Model B Rev 1.5)"
    assert cpu.features == ["neon"]


def test_apple_m1_pro_sysctl() -> None:
    cpu = read_cpu(machine("mac-m1-pro"))
    assert (cpu.brand, cpu.arch) == ("Apple M1 Pro", "arm64")
    assert cpu.features == ["neon", "dotprod"]


def test_apple_m5_sysctl_knows_dotprod_but_not_simd_names() -> None:
    # The recorded `sysctl hw machdep` stops before AdvSIMD and the brand string.
    cpu = read_cpu(machine("mac-m5"))
    assert cpu.features == ["dotprod"]
    assert cpu.features_unknown == ["neon"]
    assert cpu.logical_cores == 10  # hw.ncpu


def test_intel_mac_reads_avx2_from_leaf7() -> None:
    cpu = read_cpu(machine("mac-intel-avx2"))
    assert cpu.features == ["avx", "avx2", "f16c", "fma"]


def test_xeon_w_mac_has_avx512f() -> None:
    cpu = read_cpu(machine("mac-xeon-w"))
    assert "avx512f" in cpu.features and "avx2" in cpu.features


def test_windows_uses_processor_feature_ids_and_marks_the_rest_unknown() -> None:
    cpu = read_cpu(machine("windows-rtx4090"))
    assert cpu.arch == "x86_64"
    assert cpu.features == ["avx", "avx2"]
    assert cpu.features_unknown == ["f16c", "fma"]
