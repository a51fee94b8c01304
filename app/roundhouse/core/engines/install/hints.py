"""How a person gets a missing engine: Roundhouse installs it, or links to its installer."""

from __future__ import annotations

from roundhouse.api.engines import EngineSpec, InstallerLink


def installer_link(spec: EngineSpec, system: str) -> InstallerLink | None:
    """The engine's own installer for this OS (Ollama's), if the catalog lists one."""
    return next((link for link in spec.installers if link.os == system), None)


def pip_requirements(spec: EngineSpec, system: str) -> list[str]:
    """What `pip install` gets in the engine's managed environment on this OS."""
    chosen = [r.spec for r in spec.pip_requirements if r.os in (None, system)]
    if chosen:
        return chosen
    return [spec.python_package] if spec.python_package else []


def install_hint(spec: EngineSpec, system: str) -> str | None:
    """One sentence on how to get the engine here; None when there is nothing to offer."""
    link = installer_link(spec, system)
    if link is not None:
        if link.url.endswith((".exe", ".dmg", ".pkg", ".msi")):
            return f"Download and run {link.label}: {link.url}, then look again."
        return f"Install it with {link.label} ({link.url}), then look again."
    if spec.managed_subdir:
        return f"Roundhouse can install an official {spec.title} build for this machine."
    if spec.python_package:
        packages = " and ".join(pip_requirements(spec, system))
        return f"Roundhouse can install {packages} in a Python environment of its own."
    return None
