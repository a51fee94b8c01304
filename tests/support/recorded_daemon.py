"""`roundhouse serve` with a recorded machine's hardware (one of tests/fixtures/hardware made
into an inventory): `python -m tests.support.recorded_daemon HOME INVENTORY.json`. The daemon
is the real one; only what its hardware probe answers is the recorded machine's."""

from __future__ import annotations

import sys
from pathlib import Path

from roundhouse.api.hardware import GpuSample, HardwareInventory
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home, resolve_home
from roundhouse.server.daemon import HardwareFactory, ServeOptions, print_ready, run_daemon
from roundhouse.server.services import HardwareSource


class RecordedHardware:
    """A HardwareSource that answers one recorded inventory and samples nothing."""

    def __init__(self, inventory: HardwareInventory) -> None:
        self._inventory = inventory

    def inventory(self) -> HardwareInventory:
        return self._inventory

    def sample_gpus(self) -> list[GpuSample]:
        return []

    def close(self) -> None:
        pass


def recorded_argv(root: Path, inventory: Path) -> list[str]:
    return [sys.executable, "-m", "tests.support.recorded_daemon", str(root), str(inventory)]


def recorded_machine(
    base: Path, name: str, inventory: HardwareInventory, models: tuple[str, ...] = ()
) -> tuple[Path, list[str], Path]:
    """A machine under `base`: its home, the serve command that has `inventory` as its
    hardware, and its models folder (a Hub cache holding `models`)."""
    hardware = base / f"{name}-hw.json"
    hardware.write_text(inventory.model_dump_json())
    folder = base / f"{name}-models"
    folder.mkdir()
    for model in models:
        (folder / ("models--" + model.replace("/", "--"))).mkdir()
    return base / name, recorded_argv(base / name, hardware), folder


def serve_with(home_dir: str, hardware: HardwareFactory) -> int:
    """`roundhouse serve --port 0` for `home_dir`, its hardware probe being `hardware`."""
    return run_daemon(
        resolve_home(Path(home_dir)),
        ServeOptions(port=0),
        hardware_factory=hardware,
        on_ready=print_ready,
    )


def main(argv: list[str]) -> int:
    home_dir, inventory_file = argv
    inventory = HardwareInventory.model_validate_json(Path(inventory_file).read_text("utf-8"))

    def hardware(home: Home, settings: Settings) -> HardwareSource:
        return RecordedHardware(inventory)

    return serve_with(home_dir, hardware)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
