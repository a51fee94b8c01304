"""Attaching to engines Roundhouse did not start: scan this machine, probe a URL the user adds.

    engines = await find_running_engines(load_catalog(), exclude_pids=our_engine_pids)
    found = await look_for_engines(exclude_pids=our_engine_pids)  # .engines, .left_out
    endpoint = await probe_openai_endpoint("http://127.0.0.1:1234", api_key=key_or_none)

`cmdline` recognises engine command lines and redacts their secrets, `scan` finds engine
processes and their ports, `trust` says which may be adopted (the user's own, on loopback),
`probe` asks a server over HTTP, `running` puts these together into `look_for_engines`,
`endpoint` checks a user's OpenAI-compatible URL.
"""

from roundhouse.core.engines.attach.endpoint import (
    EndpointError,
    EndpointKeyError,
    probe_openai_endpoint,
)
from roundhouse.core.engines.attach.running import (
    LeftOut,
    RunningEngines,
    find_running_engines,
    look_for_engines,
)

__all__ = [
    "EndpointError",
    "EndpointKeyError",
    "LeftOut",
    "RunningEngines",
    "find_running_engines",
    "look_for_engines",
    "probe_openai_endpoint",
]
