"""Run the vLLM or SGLang STAND-IN with the argv the real tools take.

    python -m tests.fakes.openai_engines vllm serve MODEL --host H --port P [...]
    python -m tests.fakes.openai_engines vllm --model MODEL --host H --port P [...]
    python -m tests.fakes.openai_engines sglang --model-path M --host H --port P [...]

Engine flags that change nothing here (parallelism, memory, dtypes) are accepted and ignored;
unknown flags exit 2 as argparse does, and so do parser names the engine does not register.
--enable-auto-tool-choice, --tool-call-parser and --reasoning-parser work as in the engines:
without them vLLM refuses `tools` (400) and SGLang answers a call as plain text; with a
reasoning parser the model "thinks" first. Replies with reasoning or tool calls are
scripted (see shapes.py). Stand-in-only flags: --load-seconds, --token-delay,
--standin-shape, --reasoning-field (vLLM),
--record-requests FILE (each request body, and the argv first, as JSON lines), --die-after
(vLLM), --wedge-after/--wedge-timeout (SGLang), --metric-names (vLLM), --join-timeout (vLLM
across nodes). `vllm --version` prints the version the stand-in plays. vLLM's
--nnodes/--node-rank/--master-addr/--master-port/--headless are checked and played, and so
is --distributed-executor-backend ray against the Ray stand-in at RAY_ADDRESS: see nodes.py.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import FrameType

from tests.fakes.openai_engines.nodes import (
    Head,
    NodeArgs,
    RayDriver,
    add_node_flags,
    follow,
    node_args,
)
from tests.fakes.openai_engines.server import VLLM_VERSION, Settings, make_server

VLLM_IGNORED_VALUES = (
    ("-tp", "--tensor-parallel-size"),
    ("-pp", "--pipeline-parallel-size"),
    ("--data-parallel-size", "-dp"),
    ("--gpu-memory-utilization",),
    ("--dtype",),
    ("--kv-cache-dtype",),
    ("--quantization", "-q"),
    ("--max-num-batched-tokens",),
    ("--swap-space",),
    ("--seed",),
    ("--speculative-config",),
    ("--chat-template",),
    ("--generation-config",),
    ("--tokenizer",),
    ("--revision",),
    ("--download-dir",),
    ("--uvicorn-log-level",),
)
VLLM_IGNORED_SWITCHES = (
    "--trust-remote-code",
    "--enforce-eager",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--disable-log-requests",
    "--disable-log-stats",
)
SGLANG_IGNORED_VALUES = (
    ("--tp", "--tp-size", "--tensor-parallel-size"),
    ("--dp", "--dp-size", "--data-parallel-size"),
    ("--mem-fraction-static",),
    ("--dtype",),
    ("--kv-cache-dtype",),
    ("--nnodes",),
    ("--node-rank",),
    ("--dist-init-addr",),
    ("--quantization",),
    ("--chunked-prefill-size",),
    ("--attention-backend",),
    ("--tokenizer-path",),
    ("--chat-template",),
    ("--speculative-algorithm",),
    ("--speculative-draft-model-path",),
    ("--speculative-num-steps",),
    ("--speculative-eagle-topk",),
    ("--speculative-num-draft-tokens",),
    ("--log-level",),
    ("--random-seed",),
)
SGLANG_IGNORED_SWITCHES = ("--trust-remote-code", "--disable-radix-cache", "--enable-torch-compile")


# The engines' parser registries (vLLM: tool_parsers/__init__.py, reasoning/__init__.py;
# SGLang: ToolCallParserEnum, ReasoningParser.DetectorMap): an unknown name ends the start.
VLLM_TOOL_PARSERS = (
    "deepseek_v3", "deepseek_v31", "ernie45", "glm45", "granite-20b-fc", "granite", "hermes",
    "hunyuan_a13b", "internlm", "jamba", "kimi_k2", "llama3_json", "llama4_json",
    "llama4_pythonic", "longcat", "minimax_m2", "minimax", "mistral", "olmo3", "openai",
    "phi4_mini_json", "pythonic", "qwen3_coder", "qwen3_xml", "seed_oss", "step3", "xlam",
)  # fmt: skip
VLLM_REASONING_PARSERS = (
    "deepseek_r1", "deepseek_v3", "ernie45", "glm45", "openai_gptoss", "granite",
    "hunyuan_a13b", "kimi_k2", "minimax_m2", "mistral", "olmo3", "qwen3", "seed_oss", "step3",
)  # fmt: skip
SGLANG_TOOL_PARSERS = (
    "deepseekv3", "deepseekv31", "glm", "glm45", "gpt-oss", "kimi_k2", "llama3", "mistral",
    "pythonic", "qwen", "qwen25", "qwen3_coder", "step3", "hermes",
)  # fmt: skip
SGLANG_REASONING_PARSERS = (
    "deepseek-r1", "deepseek-v3", "glm45", "gpt-oss", "kimi", "kimi_k2", "qwen3",
    "qwen3-thinking", "minimax", "step3", "mistral",
)  # fmt: skip
SHAPES = ("llamacpp", "vllm", "sglang")


def _standin_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("stand-in only")
    group.add_argument("--load-seconds", type=float, default=0.3, metavar="S")
    group.add_argument("--token-delay", type=float, default=0.0, metavar="S")
    group.add_argument("--record-requests", metavar="FILE")
    group.add_argument(
        "--standin-shape",
        choices=SHAPES,
        help="whose bytes replies with reasoning or tool calls have (default: the engine's)",
    )


def _ignored(
    parser: argparse.ArgumentParser,
    values: tuple[tuple[str, ...], ...],
    switches: tuple[str, ...],
) -> None:
    group = parser.add_argument_group("accepted and ignored")
    for names in values:
        group.add_argument(*names)
    for name in switches:
        group.add_argument(name, action="store_true")


def vllm_settings(argv: list[str]) -> tuple[NodeArgs, Settings]:
    serve = bool(argv) and argv[0] == "serve"
    prog = "vllm serve" if serve else "python -m vllm.entrypoints.openai.api_server"
    parser = argparse.ArgumentParser(prog=prog, allow_abbrev=False)
    if serve:
        parser.add_argument("model_tag", nargs="?")
        argv = argv[1:]
    parser.add_argument("--model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key")
    parser.add_argument("--served-model-name", nargs="+")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--max-num-seqs", type=int, default=256)
    parser.add_argument("--allowed-media-domains", nargs="+", default=[])
    parser.add_argument("--enable-auto-tool-choice", action="store_true")
    parser.add_argument("--tool-call-parser", choices=VLLM_TOOL_PARSERS)
    parser.add_argument("--reasoning-parser", choices=VLLM_REASONING_PARSERS)
    _ignored(parser, VLLM_IGNORED_VALUES, VLLM_IGNORED_SWITCHES)
    _standin_flags(parser)
    parser.add_argument(
        "--reasoning-field",
        choices=["reasoning", "reasoning_content", "both"],
        default="reasoning",
        help="vLLM <= 0.11.0: reasoning_content; then both for a while; now reasoning",
    )
    parser.add_argument("--die-after", type=float, metavar="S", help="/health 503 after S s")
    parser.add_argument("--metric-names", choices=["new", "old", "both"], default="both")
    add_node_flags(parser)
    args = parser.parse_args(argv)
    model = getattr(args, "model_tag", None) or args.model
    if not model:
        parser.error("the model is required (vllm serve MODEL, or --model)")
    return node_args(parser, args), Settings(
        personality="vllm",
        model=model,
        served_names=args.served_model_name or [model],
        host=args.host,
        port=args.port,
        api_key=args.api_key or os.environ.get("VLLM_API_KEY") or None,
        load_s=args.load_seconds,
        token_delay_s=args.token_delay,
        die_after_s=args.die_after,
        max_model_len=args.max_model_len,
        max_running=args.max_num_seqs,
        metric_names=args.metric_names,
        allowed_media_domains=args.allowed_media_domains,
        record_path=args.record_requests,
        auto_tool_choice=args.enable_auto_tool_choice,
        tool_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        shape=args.standin_shape,
        reasoning_field=args.reasoning_field,
    )


def sglang_settings(argv: list[str]) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m sglang.launch_server", allow_abbrev=False)
    parser.add_argument("--model-path", "--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--api-key")
    parser.add_argument("--served-model-name")
    parser.add_argument("--context-length", type=int, default=4096)
    parser.add_argument("--max-running-requests", type=int, default=256)
    parser.add_argument("--enable-metrics", action="store_true")
    parser.add_argument("--allowed-media-domains", nargs="+", default=[])
    parser.add_argument("--tool-call-parser", choices=SGLANG_TOOL_PARSERS)
    parser.add_argument("--reasoning-parser", choices=SGLANG_REASONING_PARSERS)
    _ignored(parser, SGLANG_IGNORED_VALUES, SGLANG_IGNORED_SWITCHES)
    _standin_flags(parser)
    parser.add_argument("--wedge-after", type=float, metavar="S", help="generation hangs after S")
    parser.add_argument("--wedge-timeout", type=float, default=20.0, metavar="S")
    args = parser.parse_args(argv)
    return Settings(
        personality="sglang",
        model=args.model_path,
        served_names=[args.served_model_name or args.model_path],
        host=args.host,
        port=args.port,
        api_key=args.api_key,
        load_s=args.load_seconds,
        token_delay_s=args.token_delay,
        wedge_after_s=args.wedge_after,
        wedge_timeout_s=args.wedge_timeout,
        max_model_len=args.context_length,
        max_running=args.max_running_requests,
        enable_metrics=args.enable_metrics,
        server_args={k: v for k, v in vars(args).items() if k != "api_key"},
        allowed_media_domains=args.allowed_media_domains,
        record_path=args.record_requests,
        tool_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        shape=args.standin_shape,
        reasoning_field="reasoning_content",
    )


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("vllm", "sglang"):
        print(
            "usage: python -m tests.fakes.openai_engines {vllm,sglang} ...\n"
            "error: choose a personality: vllm or sglang",
            file=sys.stderr,
        )
        return 2
    vllm = argv[0] == "vllm"
    if vllm and argv[1:] == ["--version"]:
        print(VLLM_VERSION)
        return 0
    nodes: NodeArgs | None = None
    if vllm:
        nodes, settings = vllm_settings(argv[1:])
    else:
        settings = sglang_settings(argv[1:])
    if settings.record_path is not None:
        with Path(settings.record_path).open("a", encoding="utf-8") as out:
            redirects = os.environ.get("VLLM_MEDIA_URL_ALLOW_REDIRECTS")
            host_ip = os.environ.get("VLLM_HOST_IP")
            record = {"argv": argv, "media_redirects": redirects, "vllm_host_ip": host_ip}
            out.write(json.dumps(record) + "\n")
    stopping = threading.Event()
    server_box: list[ThreadingHTTPServer] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        # Once is enough: a second signal (the group's, then the process's own) re-entering
        # Event.set() would deadlock on the Event's lock, as a real engine never does.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stopping.set()
        for server in server_box:
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    name = "vLLM" if vllm else "SGLang"
    log(f"INFO:     {name} STAND-IN (pid {os.getpid()}) loading {settings.model}")
    if nodes is not None and nodes.headless:
        return follow(nodes, stopping)  # a follower serves no HTTP
    head: Head | None = None
    if nodes is not None and nodes.multi:
        try:
            head = Head(nodes, stopping)
        except OSError as exc:
            log(f"ERROR:    the master port {nodes.master_port} cannot be opened: {exc}")
            return 1
        if not head.gather():
            head.close()
            return 0 if stopping.is_set() else 1
    ray: RayDriver | None = None
    if nodes is not None and nodes.backend == "ray":
        ray = RayDriver.attach(nodes.world_size, stopping)
        if ray is None:
            return 1
    if vllm:  # vLLM's HTTP server listens only once the model is loaded
        if stopping.wait(settings.load_s):
            return 0
        ready_at = time.monotonic()
    else:  # SGLang listens at once; /health_generate waits for the model
        ready_at = time.monotonic() + settings.load_s
    try:
        server, engine = make_server(settings, ready_at)
    except OSError as exc:
        log(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address: {exc}")
        return 1
    engine.stop = stopping
    server_box.append(server)
    if stopping.is_set():
        return 0
    log(f"INFO:     Uvicorn running on http://{settings.host}:{server.server_address[1]}")

    def announce() -> None:
        if not vllm and not stopping.wait(settings.load_s):
            log("The server is fired up and ready to roll!")
        if vllm and settings.die_after_s is not None and not stopping.wait(settings.die_after_s):
            log("ERROR:    EngineDeadError: EngineCore encountered an issue (--die-after)")

    threading.Thread(target=announce, daemon=True).start()
    workers = head or ray
    if workers is not None:
        lost = workers.lost

        def end_with_a_node() -> None:
            # vLLM's engine dies with any node's workers, and its API server with it.
            lost.wait()
            if not stopping.is_set():
                threading.Thread(target=server.shutdown, daemon=True).start()

        threading.Thread(target=end_with_a_node, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.05)
    finally:
        server.server_close()
        if workers is not None:
            workers.close()
    return 1 if workers is not None and workers.lost.is_set() and not stopping.is_set() else 0


if __name__ == "__main__":
    sys.exit(main())
