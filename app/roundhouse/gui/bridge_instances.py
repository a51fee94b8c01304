"""The bridge's engine instances: the list the change feed keeps, one Call per action."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from roundhouse.api.engine_nodes import VllmAcrossAnswer, VllmAcrossRequest
from roundhouse.api.instances import (
    AddEndpointRequest,
    InstanceInfo,
    InstanceList,
    InstanceLogs,
    Preset,
    PresetList,
    StartRequest,
)
from roundhouse.client import DaemonClient
from roundhouse.gui.bridge_tasks import TasksMixin
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance


class InstancesMixin(TasksMixin):
    """Lists the daemon's instances and acts on them (mixed into DaemonBridge)."""

    if TYPE_CHECKING:
        # Provided by DaemonBridge.
        instances_changed: SignalInstance
        instances: list[InstanceInfo] | None

    # Instances: the list as the feed and the actions' answers give it, one Call per action.

    def start_instance(self, request: StartRequest) -> Call:
        """Answers with the new InstanceInfo (status "starting") once the daemon accepted it."""

        def accepted(info: InstanceInfo) -> None:
            self._put_instance(info)

        return self._call("start an engine", lambda c: c.start_instance(request), accepted)

    def start_vllm_across(self, request: VllmAcrossRequest) -> Call:
        """vLLM here (the head) and on paired machines as one instance; answers with the
        VllmAcrossAnswer once the daemon accepted it (or refused it, saying which machine)."""

        def accepted(answer: VllmAcrossAnswer) -> None:
            if answer.instance is not None:
                self._put_instance(answer.instance)

        return self._call(
            "start vLLM across machines", lambda c: c.start_vllm_across(request), accepted
        )

    def stop_instance(self, instance_id: str, *, force: bool = False) -> Call:
        """Stop it (a failed one is dismissed, an endpoint detached); answers with its last
        InstanceInfo. `force` stops an engine Roundhouse did not start (the user agreed)."""

        def stopped(info: InstanceInfo) -> None:
            self._drop_instance(info.id)

        def stop(client: DaemonClient) -> Awaitable[InstanceInfo]:
            return client.stop_instance(instance_id, force=force)

        return self._call("stop an engine", stop, stopped)

    def scan_instances(self) -> Call:
        """Look for engines running without Roundhouse; answers with the whole InstanceList."""

        def scanned(listed: InstanceList) -> None:
            self._set_instances(listed.instances)

        return self._call("look for running engines", lambda c: c.scan_instances(), scanned)

    def add_endpoint(self, request: AddEndpointRequest) -> Call:
        """Attach an OpenAI-compatible server; answers with its InstanceInfo."""
        return self._call("attach a server", lambda c: c.add_endpoint(request), self._put_instance)

    def allow_presets(self, instance_id: str, allowed: bool) -> Call:
        """Let an engine Roundhouse did not start serve preset models, or not; answers with
        its InstanceInfo."""

        def change(client: DaemonClient) -> Awaitable[InstanceInfo]:
            return client.allow_presets(instance_id, allowed)

        return self._call("change what an engine serves", change, self._put_instance)

    def instance_metrics(self, instance_id: str) -> Call:
        """Answers with InstanceMetrics; a 404 problem for engines that serve none."""
        return self._call("read an engine's metrics", lambda c: c.instance_metrics(instance_id))

    def restart_instance(self, instance_id: str) -> Call:
        return self._call(
            "restart an engine", lambda c: c.restart_instance(instance_id), self._put_instance
        )

    def instance_logs(self, instance_id: str, since: int = 0, limit: int = 500) -> Call:
        """Answers with InstanceLogs: lines after `since`; pass its `next` to follow."""

        def fetch(client: DaemonClient) -> Awaitable[InstanceLogs]:
            return client.instance_logs(instance_id, since=since, limit=limit)

        return self._call("read an engine's log", fetch)

    def presets(self, engine: str, model: str) -> Call:
        """Answers with the PresetList saved for this engine and model."""

        def fetch(client: DaemonClient) -> Awaitable[PresetList]:
            return client.presets(engine=engine, model=model)

        return self._call("list presets", fetch)

    def save_preset(self, preset: Preset) -> Call:
        return self._call("save a preset", lambda c: c.save_preset(preset))

    def delete_preset(self, engine: str, model: str, name: str) -> Call:
        return self._call("delete a preset", lambda c: c.delete_preset(engine, model, name))

    # The list as actions change it: their answer shows at once; the feed's event that
    # follows (the daemon publishes every change it makes) carries the same.

    def _put_instance(self, info: InstanceInfo) -> None:
        """Show an instance as an action answered, without waiting for the next listing."""
        current = list(self.instances or [])
        for index, known in enumerate(current):
            if known.id == info.id:
                current[index] = info
                break
        else:
            current.append(info)
        self._set_instances(current)

    def _drop_instance(self, instance_id: str) -> None:
        self._set_instances([i for i in self.instances or [] if i.id != instance_id])

    def _set_instances(self, instances: list[InstanceInfo]) -> None:
        self.instances = instances
        self.instances_changed.emit(instances)
