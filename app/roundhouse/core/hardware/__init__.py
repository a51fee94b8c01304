"""The hardware inventory: CPU, memory, disk, GPUs and the engines that suit them, and the
1 Hz sampler of live counters.

Floor 1 of roundhouse.core, beside knowledge, chat and system (none imports another): it
may use infra and core.errors only.
"""

from roundhouse.core.hardware.host import HostReader, LocalHost
from roundhouse.core.hardware.inventory import HardwareProbe, collect_inventory

__all__ = ["HardwareProbe", "HostReader", "LocalHost", "collect_inventory"]
