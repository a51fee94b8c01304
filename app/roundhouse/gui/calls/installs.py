"""Engine installs (jobs followed live) and llama.cpp's builds, asked of the daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.engines import EngineId
from roundhouse.api.installs import InstallRequest
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class InstallCalls:
    """Engine installs (jobs followed live) and llama.cpp's builds. The daemon detects the
    engines again after each change; the change feed brings what it found."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def start(self, engine: EngineId, request: InstallRequest) -> Call:
        """Answers with the InstallJob the daemon started; the change feed brings the rest."""
        return self._bridge.call(
            "install an engine", lambda c: c.install_engine(engine.value, request)
        )

    def job(self, job_id: str) -> Call:
        """Answers with the InstallJob as it is now (the change feed brings its changes)."""
        return self._bridge.call("follow an install", lambda c: c.install_job(job_id))

    def cancel(self, job_id: str) -> Call:
        return self._bridge.call("cancel an install", lambda c: c.cancel_install(job_id))

    def jobs(self) -> Call:
        """Answers with the InstallJobList: running ones and the last few ended."""
        return self._bridge.call("list installs", lambda c: c.install_jobs())

    def builds(self) -> Call:
        """Answers with the BuildList of llama.cpp."""
        return self._bridge.call("list llama.cpp builds", lambda c: c.llamacpp_builds())

    def use_build(self, tag: str) -> Call:
        return self._bridge.call(
            "switch llama.cpp builds",
            lambda c: c.switch_llamacpp_build(tag),
        )

    def remove_build(self, tag: str, *, force: bool = False) -> Call:
        """Answers with the BuildList left; `force` also removes the current build."""
        return self._bridge.call(
            "remove a llama.cpp build",
            lambda c: c.remove_llamacpp_build(tag, force=force),
        )

    def remove_venv(self, engine: EngineId) -> Call:
        return self._bridge.call(
            "remove an engine's environment",
            lambda c: c.remove_engine_venv(engine.value),
        )
