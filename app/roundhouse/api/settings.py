"""The one typed settings model, persisted by the daemon as TOML."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

SETTINGS_SCHEMA_VERSION = 1


class QuitAction(StrEnum):
    ASK = "ask"
    STOP_DAEMON = "stop-daemon"
    LEAVE_SERVING = "leave-serving"


class LeftoverAction(StrEnum):
    # Keep serving them: a daemon that crashed or was killed must not cost a model reload.
    ADOPT = "adopt"
    # Stop them: nothing runs that this daemon did not start.
    REAP = "reap"


class DaemonSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="the control API binds here")
    port: int = Field(default=11500, ge=0, le=65535, description="0 picks a free port")
    sample_interval_s: float = Field(default=1.0, gt=0.05, le=60)
    sample_history_s: int = Field(default=3600, ge=900, le=86400)


class EngineSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    python_paths: list[str] = Field(
        default=[],
        description="Python interpreters to look in for mlx-lm, vLLM and SGLang",
    )
    on_leftover: LeftoverAction = Field(
        default=LeftoverAction.ADOPT,
        description="what a starting daemon does with engines an earlier one left running",
    )
    ready_timeout_s: float = Field(
        default=600.0,
        ge=5,
        le=7200,
        description="how long an engine may take to load its model before it is given up",
    )


class UiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keep_serving_on_close: bool = True
    quit_action: QuitAction = QuitAction.ASK
    chart_refresh_hz: float = Field(default=2.0, ge=0.5, le=10)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SETTINGS_SCHEMA_VERSION
    models_dir: str | None = Field(
        default=None, description="where models are stored; empty means the Hugging Face cache"
    )
    daemon: DaemonSettings = DaemonSettings()
    engines: EngineSettings = EngineSettings()
    ui: UiSettings = UiSettings()
