"""The running instances in words: a row's short name, what stopping it is called and asks."""

from __future__ import annotations

from dataclasses import dataclass

from roundhouse.api.external import AttachSource
from roundhouse.api.instances import InstanceInfo, InstanceStatus
from roundhouse.gui.widgets.instances_model import model_name


def is_endpoint(info: InstanceInfo) -> bool:
    """A server the user attached by URL: stopping it only detaches it."""
    return info.found_by == AttachSource.USER_ENDPOINT


def instance_name(info: InstanceInfo) -> str:
    """The engine and its model, as the section's messages name an instance."""
    return f"{info.engine.value} ({model_name(info.model)})"


def stop_verbs(info: InstanceInfo) -> tuple[str, str]:
    """What stopping it is while on its way and once done: a failed row is dismissed, an
    attached server detached."""
    if info.status == InstanceStatus.FAILED:
        return "Dismissing", "dismissed"
    if is_endpoint(info):
        return "Detaching", "detached"
    return "Stopping", "stopped"


@dataclass(frozen=True)
class StopQuestion:
    """What to ask before stopping an instance Roundhouse did not start."""

    title: str
    text: str
    detail: str
    action: str
    # The user agreed: the daemon stops an engine it did not start only when told.
    force: bool


def stop_question(info: InstanceInfo) -> StopQuestion:
    """Detaching a server forgets it; stopping a found engine may hurt whoever relies on it."""
    if is_endpoint(info):
        return StopQuestion(
            title="Detach a server",
            text=f"Detach {info.name or info.base_url}?",
            detail=(
                "Roundhouse forgets its address and its API key. The server itself keeps "
                "running; attach it again any time."
            ),
            action="Detach",
            force=False,
        )
    return StopQuestion(
        title="Stop an engine Roundhouse did not start",
        text=f"Stop {info.engine.value} on port {info.port}?",
        detail=(
            "Roundhouse found this engine running but did not start it: another program "
            "or person may rely on it."
        ),
        action="Stop it",
        force=True,
    )
