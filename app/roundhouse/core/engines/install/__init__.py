"""Installing engines: official llama.cpp builds, Python engines in their own environments.

What the daemon calls (every coroutine may be cancelled; progress callbacks run on the
event loop's thread and must return quickly):

llama.cpp, from GitHub release assets (`llamacpp`, `managed`):

    plan = await plan_llamacpp_install(inventory, tag=None, prefer=None, releases_url=None)
    # plan.release.tag, plan.choice.asset.name, plan.choice.reason: show them, then
    build = await install_llamacpp(home.data_dir / "engines", plan, on_progress=callback)
    builds = ManagedBuilds(home.data_dir / "engines")
    builds.installed(); builds.current_tag(); builds.switch(tag)
    await builds.remove(tag, force=False); builds.partials(); await builds.discard_partial(tag)

    The releases URL is the argument, else $ROUNDHOUSE_LLAMACPP_RELEASES_URL, else
    https://api.github.com/repos/ggml-org/llama.cpp/releases. Builds land in
    `<engines>/llama.cpp/<tag>/`, where detection already looks; `current` names the one
    detection offers first.

mlx-lm, vLLM, SGLang, each in `<engines>/venvs/<engine>/` (`venvs`), at the versions the
release pins in resources/engines/pins (`pins`), every file checked against its sha256:

    plan = plan_python_engine(EngineId.VLLM, version=None, unverified=False, pins_dir=None)
    # plan.summary says what is installed and what pip checks; another version needs
    # unverified=True (InvalidInputError otherwise)
    venv = await install_python_engine(EngineId.VLLM, engines_dir, plan=plan, python=None,
                                       pip_args=(), on_progress=callback)
    await remove_python_engine(EngineId.VLLM, engines_dir)

    The pins folder is the argument, else $ROUNDHOUSE_ENGINE_PINS, else the shipped one.

Ollama is not installed by Roundhouse: `hints.installer_link(spec, system)` gives its own
installer, and detection fills `MissingEngine.install_hint` for every engine.

Errors are RoundhouseErrors (`errors`): DownloadError and ChecksumError (502), PipError,
HashMismatchError (502), PinsError, UnsafeArchiveError, InstallBusyError (409),
NotFoundError and InvalidInputError.
"""
