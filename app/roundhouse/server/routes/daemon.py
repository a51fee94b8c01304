"""Routes about the daemon itself: status, settings and shutdown."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter

from roundhouse.api.daemon import DaemonStatus, ShutdownAccepted
from roundhouse.api.settings import Settings
from roundhouse.core.gateway.aliases import check_aliases
from roundhouse.core.infra.settings import check_cors_origins, check_new_settings, save_settings
from roundhouse.core.system.autostart import apply_autostart, entry_for_platform, launch_command
from roundhouse.server.deps import Services, TheGateway

router = APIRouter(tags=["daemon"])


@router.get("/status", response_model=DaemonStatus)
async def get_status(services: Services) -> DaemonStatus:
    return DaemonStatus(
        running=True,
        pid=services.pid,
        url=services.url,
        version=services.version,
        uptime_s=round(time.time() - services.started_at, 3),
        home=services.home.label,
    )


@router.post("/shutdown", response_model=ShutdownAccepted, status_code=202)
async def shutdown(services: Services) -> ShutdownAccepted:
    services.request_shutdown()
    return ShutdownAccepted()


@router.get("/settings", response_model=Settings)
async def get_settings(services: Services) -> Settings:
    return services.settings


@router.put("/settings", response_model=Settings)
async def put_settings(new: Settings, services: Services, gateway: TheGateway) -> Settings:
    check_cors_origins(new, services.gateway_key.is_set)
    if new.gateway.aliases != services.settings.gateway.aliases:
        served = {e.model.id for e in gateway.listed() if not e.model.alias_of}
        check_aliases(new.gateway.aliases, services.settings.gateway.aliases, served)
    # In a thread: it looks at folders and ports (and names a port's owner through psutil).
    await asyncio.to_thread(check_new_settings, new, services.settings)
    if new.ui.start_at_login or services.settings.ui.start_at_login:
        # Enabling (again) writes the entry with this interpreter, disabling removes it; a
        # failure refuses the whole change in words, so the saved setting never lies.
        command = launch_command(services.home.root)
        await asyncio.to_thread(
            apply_autostart, new.ui.start_at_login, command, entry_for_platform()
        )
    save_settings(services.home.settings_file, new)
    before, services.settings = services.settings, new
    if new.engines.python_paths != before.engines.python_paths:
        # Pythons count at the next detection: look in them now; the change feed says what
        # was found, to the app and `roundhouse events` alike.
        services.state.detect_engines_soon()
    await services.settings_changed()
    return new
