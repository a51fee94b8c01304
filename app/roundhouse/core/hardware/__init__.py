"""The hardware inventory: CPU, memory, disk, GPUs and the engines that suit them."""

from roundhouse.core.hardware.host import HostReader, LocalHost
from roundhouse.core.hardware.inventory import HardwareProbe, collect_inventory

__all__ = ["HardwareProbe", "HostReader", "LocalHost", "collect_inventory"]
