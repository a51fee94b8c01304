"""The one typed settings model, persisted by the daemon as TOML."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from roundhouse.api.shortcut import DEFAULT_QUICK_CHAT_KEY, parse_shortcut
from roundhouse.base.host_names import canonical_host

SETTINGS_SCHEMA_VERSION = 1


class QuitAction(StrEnum):
    ASK = "ask"
    STOP_DAEMON = "stop-daemon"
    LEAVE_SERVING = "leave-serving"


class ThemeChoice(StrEnum):
    """The desktop app's colours: the OS's light or dark setting, or one of them always."""

    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"


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


MAX_MODEL_NAME = 200


def check_model_name(name: str, what: str) -> str:
    """A model name as a request's `model` carries it: one token of printable characters."""
    clean = name.strip()
    if not clean:
        raise ValueError(f"{what} is empty: give a model name")
    if len(clean) > MAX_MODEL_NAME:
        raise ValueError(f"{what} {clean[:40]!r}... is longer than {MAX_MODEL_NAME} characters")
    if any(c.isspace() or not c.isprintable() for c in clean):
        raise ValueError(f"{what} {clean!r} has spaces or control characters: use one word")
    return clean


class GatewaySettings(BaseModel):
    """The OpenAI-compatible gateway: just-in-time starts, residency, queue, second listener."""

    model_config = ConfigDict(extra="forbid")

    just_in_time: bool = Field(
        default=True,
        description="start an instance when a request names a model no instance serves: "
        "with the model's preset, else with settings the fit estimate chooses",
    )
    idle_ttl_s: float = Field(
        default=3600.0,
        ge=0,
        le=7 * 86400,
        description="stop an instance the gateway started after this long without a request; "
        "0 keeps it",
    )
    max_resident: int = Field(
        default=1,
        ge=1,
        le=64,
        description="at most this many instances Roundhouse runs; a just-in-time start stops "
        "the least recently used idle one first",
    )
    max_concurrent: int = Field(
        default=32, ge=1, le=1024, description="requests sent to one instance at once"
    )
    queue_size: int = Field(
        default=64,
        ge=0,
        le=10000,
        description="requests that may wait per instance beyond those sent; more get 429",
    )
    queue_timeout_s: float = Field(
        default=300.0,
        ge=1,
        le=3600,
        description="a request that waited this long for its turn or its model gets 503",
    )
    listen_host: str | None = Field(
        default=None,
        description="a second address serving only /v1 for other apps (e.g. 0.0.0.0); "
        "beyond loopback it requires the gateway API key",
    )
    listen_port: int = Field(default=11501, ge=1, le=65535)
    ollama_port_enabled: bool = Field(
        default=False,
        description="also serve the gateway (Ollama's API included) on 127.0.0.1 at "
        "ollama_port, for apps that cannot change their Ollama address; refused, with the "
        "reason in the gateway's status, while Ollama itself holds the port",
    )
    ollama_port: int = Field(
        default=11434, ge=1, le=65535, description="Ollama's port, where the option listens"
    )
    allowed_hosts: list[str] = Field(
        default=[],
        description="Host header names accepted besides loopback and this machine's addresses",
    )
    cors_origins: list[str] = Field(
        default=[], description="browser origins given CORS headers; none by default"
    )
    pass_through: bool = Field(
        default=True,
        description="send an API the engine serves itself (Anthropic Messages, Responses) "
        "straight to it; off translates every request to chat completions, for an engine "
        "whose own implementation misbehaves",
    )
    media_domains: list[str] = Field(
        default=[],
        description="hosts engines may fetch images, audio and video from when a request "
        "names them by URL (exact names); none by default: only inline data: URLs",
    )

    aliases: dict[str, str] = Field(
        default={},
        description="other names for models: a request for the alias (e.g. "
        "claude-sonnet-4-5) is served by its target (e.g. qwen3-coder-30b)",
    )
    default_model: str | None = Field(
        default=None,
        max_length=MAX_MODEL_NAME,
        description="the model that serves a request naming a model nothing lists or "
        "starts; None refuses such a request (404)",
    )
    fallbacks: dict[str, list[str]] = Field(
        default={},
        description="per model, the models tried in turn when no healthy instance serves it "
        "or the prompt is longer than its instances' context (e.g. qwen3-8b: [qwen3-4b])",
    )
    circuit_failures: int = Field(
        default=3,
        ge=1,
        le=100,
        description="failures in a row (no connection, 502/503, a broken stream) after which "
        "an instance's circuit opens and it takes no requests until a health check passes",
    )
    circuit_backoff_s: float = Field(
        default=1.0,
        ge=0.1,
        le=600,
        description="the first wait before an open circuit's health check; it doubles after "
        "each failed check, up to circuit_backoff_max_s",
    )
    circuit_backoff_max_s: float = Field(
        default=60.0, ge=0.1, le=3600, description="the longest wait between health checks"
    )

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, aliases: dict[str, str]) -> dict[str, str]:
        """Names a client can send, each pointing at a model (not at another alias)."""
        out: dict[str, str] = {}
        for name, target in aliases.items():
            alias, to = check_model_name(name, "an alias"), check_model_name(target, "a target")
            if alias == to:
                raise ValueError(f"the alias {alias!r} points at itself: give another model")
            out[alias] = to
        for alias, to in out.items():
            if to in out:
                raise ValueError(
                    f"the alias {alias!r} points at {to!r}, which is an alias itself (of "
                    f"{out[to]!r}): point {alias!r} at {out[to]!r} instead, so no alias "
                    "leads to another or back to itself"
                )
        return out

    @field_validator("fallbacks")
    @classmethod
    def _fallbacks(cls, chains: dict[str, list[str]]) -> dict[str, list[str]]:
        """Model names, none falling back on itself."""
        out: dict[str, list[str]] = {}
        for name, chain in chains.items():
            model = check_model_name(name, "a model with fallbacks")
            others = [check_model_name(other, "a fallback") for other in chain]
            if model in others:
                raise ValueError(
                    f"the fallbacks of {model!r} name {model!r} itself: list other models"
                )
            out[model] = list(dict.fromkeys(others))
        return out

    @field_validator("default_model")
    @classmethod
    def _default(cls, name: str | None) -> str | None:
        if name is None or not name.strip():
            return None
        return check_model_name(name, "the default model")

    @field_validator("media_domains")
    @classmethod
    def _media_hosts(cls, names: list[str]) -> list[str]:
        """Host names alone, in one spelling: what a URL's host is compared with."""
        out: list[str] = []
        for name in names:
            host = canonical_host(name)
            if host is None:
                raise ValueError(
                    f"{name.strip()!r} is not a host name; give the name alone, without "
                    "scheme, path, port or wildcard, e.g. upload.wikimedia.org"
                )
            if host not in out:
                out.append(host)
        return out


class ChatSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    active_model: str | None = Field(
        default=None,
        description="the model the chat, quick chat, tray and `roundhouse chat` use by default; "
        "set when you pick, start or chat with one (with none set, the only model running)",
    )
    max_conversations: int = Field(
        default=1000, ge=10, le=100000, description="the oldest beyond this are deleted"
    )


class ModelsSettings(BaseModel):
    """Model downloads (the queue in the daemon) and the local library's folders."""

    model_config = ConfigDict(extra="forbid")

    max_concurrent_downloads: int = Field(
        default=2, ge=1, le=16, description="files downloaded at the same time"
    )
    stall_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="a download that receives nothing this long is retried",
    )
    download_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description="tries in a row without progress before a download fails (its part is kept)",
    )
    max_finished_downloads: int = Field(
        default=200, ge=10, le=100000, description="finished downloads kept in the list"
    )
    library_folders: list[str] = Field(
        default=[],
        description="folders of GGUF files or safetensors models the library lists besides "
        "the Hugging Face cache",
    )


class PeersSettings(BaseModel):
    """Paired machines (docs/machines.md): the peer listener and discovery."""

    model_config = ConfigDict(extra="forbid")

    listen_host: str = Field(
        default="",
        description="the address the peer listener binds (TLS) for paired machines, e.g. "
        "0.0.0.0; empty: off (this machine can still pair with others)",
    )
    port: int = Field(default=11502, ge=1, le=65535, description="the peer listener's port")
    name: str = Field(
        default="",
        max_length=200,
        description="this machine's name as its peers show it; empty: the host name",
    )
    discovery: bool = Field(
        default=False,
        description="advertise the peer listener on the LAN with mDNS (_roundhouse._tcp) so "
        "`roundhouse peers discover` finds it; pairing still needs the code",
    )


class UiSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keep_serving_on_close: bool = True
    start_at_login: bool = Field(
        default=False, description="start Roundhouse in the tray when the user logs in"
    )
    quit_action: QuitAction = QuitAction.ASK
    chart_refresh_hz: float = Field(default=2.0, ge=0.5, le=10)
    first_run_done: bool = Field(
        default=False,
        description="the first-run guide was finished or skipped (it opens on the first launch)",
    )
    check_updates: bool = Field(
        default=False,
        description="ask PyPI at most once a day whether a newer Roundhouse is out (a plain "
        "GET that sends nothing about you or this machine)",
    )
    quick_chat_global: bool = Field(
        default=True,
        description="the quick chat key works while other apps have focus (a global shortcut); "
        "off, only in Roundhouse's windows",
    )
    quick_chat_key: str = Field(
        default=DEFAULT_QUICK_CHAT_KEY,
        description="the key that opens quick chat, as Qt writes it: Ctrl+Shift+Space "
        "(Ctrl is Command on macOS, Meta is Control there and the Windows/Super key elsewhere)",
    )
    theme: ThemeChoice = Field(
        default=ThemeChoice.SYSTEM,
        description="the desktop app's colours: follow the system's light or dark setting, "
        "or always light, or always dark",
    )

    @field_validator("quick_chat_key")
    @classmethod
    def _check_quick_chat_key(cls, value: str) -> str:
        return str(parse_shortcut(value))


class NotificationWhen(StrEnum):
    # Only while no Roundhouse window is on screen (hidden to the tray or minimised).
    HIDDEN = "hidden"
    ALWAYS = "always"


class NotificationSettings(BaseModel):
    """What the app tells through the OS's notifications; each kind can be turned off."""

    model_config = ConfigDict(extra="forbid")

    when: NotificationWhen = Field(
        default=NotificationWhen.HIDDEN,
        description="hidden: only while the window is hidden or minimised; always: also while "
        "it is on screen",
    )
    download_finished: bool = Field(default=True, description="a download finished")
    download_failed: bool = Field(default=True, description="a download failed")
    engine_crashed: bool = Field(
        default=True, description="an engine stopped unexpectedly (restarted or not)"
    )
    model_loaded: bool = Field(
        default=True, description="the gateway finished loading a model a request asked for"
    )
    update_available: bool = Field(default=True, description="a newer Roundhouse is out")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SETTINGS_SCHEMA_VERSION
    models_dir: str | None = Field(
        default=None, description="where models are stored; empty means the Hugging Face cache"
    )
    daemon: DaemonSettings = DaemonSettings()
    engines: EngineSettings = EngineSettings()
    gateway: GatewaySettings = GatewaySettings()
    chat: ChatSettings = ChatSettings()
    models: ModelsSettings = ModelsSettings()
    peers: PeersSettings = PeersSettings()
    ui: UiSettings = UiSettings()
    notifications: NotificationSettings = NotificationSettings()
