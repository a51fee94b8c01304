"""Engine instances the daemon runs: started, recorded, listed, stopped, recovered at start."""

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
