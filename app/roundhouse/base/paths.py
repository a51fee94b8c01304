"""Where Roundhouse keeps config, data, logs and the daemon's discovery files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "Roundhouse"
HOME_ENV = "ROUNDHOUSE_HOME"


@dataclass(frozen=True)
class Home:
    """The folders of one Roundhouse installation (one daemon serves one home)."""

    config_dir: Path
    data_dir: Path
    log_dir: Path
    state_dir: Path
    # The single folder given by --home or $ROUNDHOUSE_HOME; None for the platform's folders.
    root: Path | None = None

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.toml"

    @property
    def discovery_file(self) -> Path:
        return self.state_dir / "daemon.json"

    @property
    def token_file(self) -> Path:
        return self.state_dir / "daemon.token"

    @property
    def lock_file(self) -> Path:
        return self.state_dir / "daemon.lock"

    @property
    def label(self) -> str:
        """How to name this home to a user."""
        return str(self.root) if self.root else f"the default home ({self.config_dir})"

    def ensure(self) -> None:
        """Create the folders, private to the user where the OS allows."""
        for folder in (self.config_dir, self.data_dir, self.log_dir, self.state_dir):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)


def resolve_home(explicit: Path | str | None = None) -> Home:
    """The home for `--home DIR`, else `$ROUNDHOUSE_HOME`, else the platform's folders."""
    chosen = explicit if explicit is not None else os.environ.get(HOME_ENV) or None
    if chosen is not None:
        root = Path(chosen).expanduser().resolve()
        return Home(
            config_dir=root / "config",
            data_dir=root / "data",
            log_dir=root / "logs",
            state_dir=root / "state",
            root=root,
        )
    return Home(
        config_dir=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        data_dir=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        log_dir=Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)),
        # The runtime dir (/run/user/UID) may vanish at logout while the daemon serves on,
        # so the discovery files live with the data.
        state_dir=Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
    )
