"""An async client for a running Ollama's native API: models, pulls, loading and unloading.

Usage (every method is a coroutine; one client may serve many concurrent calls):

    async with OllamaClient(ollama_base_url(os.environ.get("OLLAMA_HOST"))) as ollama:
        version = await ollama.version()                  # "0.6.8"
        models = await ollama.list_models()               # list[OllamaModel]       /api/tags
        final = await ollama.pull("qwen2.5:0.5b", on_progress=show)  # /api/pull, NDJSON
        async with contextlib.aclosing(ollama.pull_stream("tiny")) as steps:
            async for step in steps: ...                  # OllamaPullProgress, last "success"
        shown = await ollama.show("tiny")                 # OllamaShownModel        /api/show
        await ollama.load("tiny", keep_alive=-1)          # preload, kept until Ollama stops
        loaded = await ollama.loaded_models()             # list[OllamaLoadedModel] /api/ps
        await ollama.unload("tiny")                       # keep_alive 0
        await ollama.delete("tiny")                       # /api/delete

Errors, all RoundhouseError with a message that says what to do:
- OllamaNotRunningError: nothing listens at the URL (start `ollama serve` or the app);
- NotFoundError: Ollama (or its registry, for a pull) has no such model;
- InvalidInputError: Ollama refused the request (a bad name, a bad keep_alive);
- OllamaPullError: a pull's stream reported an error or stopped early (pulls resume);
- OllamaError: anything else (a timeout, a broken connection, an answer we cannot read).

Cancelling a pull (the task, or leaving the `async for`) closes the HTTP stream at once;
Ollama keeps the partial download and the next pull resumes it.

Loopback traffic must never reach a proxy from the environment, so the HTTP client ignores
HTTP(S)_PROXY (trust_env=False).

`client` holds OllamaClient, `errors` the errors and how Ollama's failures map onto them,
`inputs` reads OLLAMA_HOST, keep_alive and model names, `parsing` reads Ollama's answers.
"""

from roundhouse.core.engines.ollama_api.client import OllamaClient
from roundhouse.core.engines.ollama_api.errors import (
    OllamaError,
    OllamaNotRunningError,
    OllamaPullError,
)
from roundhouse.core.engines.ollama_api.inputs import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    KeepAlive,
    keep_alive_value,
    ollama_base_url,
)
from roundhouse.core.engines.ollama_api.parsing import (
    parse_loaded,
    parse_model,
    parse_shown,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "KeepAlive",
    "OllamaClient",
    "OllamaError",
    "OllamaNotRunningError",
    "OllamaPullError",
    "keep_alive_value",
    "ollama_base_url",
    "parse_loaded",
    "parse_model",
    "parse_shown",
]
