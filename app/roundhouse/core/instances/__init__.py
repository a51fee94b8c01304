"""Engine instances the daemon runs: started, recorded, listed, stopped, recovered at start.

Floor 4 of roundhouse.core: it may use engines, supervise, the floor-1 packages (knowledge
for the memory estimate) and infra.
"""

from roundhouse.core.instances.manager import (
    Instance,
    InstanceManager,
    InstanceState,
    OnLeftover,
    Recovery,
)
from roundhouse.core.instances.records import CorruptRecordsError, InstanceRecord, RecordStore

__all__ = [
    "CorruptRecordsError",
    "Instance",
    "InstanceManager",
    "InstanceRecord",
    "InstanceState",
    "OnLeftover",
    "RecordStore",
    "Recovery",
]
