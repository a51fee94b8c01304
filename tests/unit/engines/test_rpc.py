"""llama.cpp's RPC split: rpc-server's argv, the --rpc and --tensor-split of llama-server, the
addresses refused (every interface, names, IPv6 for the worker) and detection of the worker."""

from __future__ import annotations

import pytest

from roundhouse.api.engines import EngineId, LaunchParams
from roundhouse.core.engines.detect import detect_engines
from roundhouse.core.engines.launch import build_launch
from roundhouse.core.engines.rpc import (
    RpcAddress,
    build_rpc_server,
    parse_rpc_address,
    parse_rpc_list,
    rpc_args,
)
from roundhouse.core.errors import InvalidInputError
from tests.unit.engines.conftest import FakeHost, catalog, recorded
from tests.unit.engines.test_launch import found
from tests.unit.engines.test_launch_errors import refusal

GGUF = "/models/big.gguf"


def test_rpc_server_argv_binds_the_given_address_and_port_only() -> None:
    plan = build_rpc_server("/opt/llama/rpc-server", RpcAddress("192.168.1.20", 50052))
    assert plan.argv == ("/opt/llama/rpc-server", "--host", "192.168.1.20", "--port", "50052")
    assert plan.env == {}
    assert "no authentication" in plan.notes[0]


def test_rpc_server_options_threads_devices_and_cache() -> None:
    plan = build_rpc_server(
        "rpc-server",
        RpcAddress("127.0.0.1", 6000),
        threads=4,
        cache_dir="/home/u/.cache/rh rpc",
        devices=("CUDA0", "CUDA1"),
    )
    assert plan.argv[5:] == ("--threads", "4", "--device", "CUDA0,CUDA1", "--cache")
    assert plan.env == {"LLAMA_CACHE": "/home/u/.cache/rh rpc"}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", ""])
def test_every_interface_is_refused_in_words(host: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        build_rpc_server("rpc-server", RpcAddress(host, 50052))
    assert "never bound to every interface" in err.value.detail
    assert "no authentication" in err.value.detail


@pytest.mark.parametrize(
    ("host", "words"), [("gpu-box.local", "not the name"), ("fe80::1", "IPv4 addresses only")]
)
def test_the_worker_binds_an_ipv4_address_literally(host: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        build_rpc_server("rpc-server", RpcAddress(host, 50052))
    assert words in err.value.detail


def test_addresses_parse_and_bad_ones_say_what_to_write() -> None:
    assert parse_rpc_address(" 10.0.0.2:50052 ") == RpcAddress("10.0.0.2", 50052)
    assert parse_rpc_address("[fd00::2]:7000") == RpcAddress("fd00::2", 7000)
    assert str(RpcAddress("fd00::2", 7000)) == "[fd00::2]:7000"
    assert RpcAddress("127.0.0.1", 1).loopback and not RpcAddress("10.0.0.2", 1).loopback
    for bad, words in [
        ("10.0.0.2", "write HOST:PORT"),
        ("10.0.0.2:http", "give a number"),
        ("10.0.0.2:70000", "give a number"),
        ("0.0.0.0:50052", "every interface"),
        ("[::]:50052", "every interface"),
    ]:
        with pytest.raises(InvalidInputError) as err:
            parse_rpc_address(bad)
        assert words in err.value.detail, bad
    with pytest.raises(InvalidInputError, match="named twice"):
        parse_rpc_list(["10.0.0.2:1,10.0.0.3:1", "10.0.0.2:1"])


def test_llama_server_gets_rpc_and_the_split() -> None:
    spec = catalog().spec(EngineId.LLAMA_CPP)
    engine = found(EngineId.LLAMA_CPP, "llama-server")
    params = LaunchParams(
        model=GGUF,
        port=1,
        n_gpu_layers="all",
        rpc=("10.0.0.2:50052", "10.0.0.3:50052"),
        tensor_split=(12, 10.5, 6),
    )
    argv = build_launch(spec, engine, params).argv
    at = argv.index("--rpc")
    assert argv[at : at + 4] == (
        "--rpc",
        "10.0.0.2:50052,10.0.0.3:50052",
        "--tensor-split",
        "12,10.5,6",
    )
    plain = build_launch(spec, engine, LaunchParams(model=GGUF, port=1)).argv
    assert "--rpc" not in plain and "--tensor-split" not in plain


def test_split_without_workers_and_flags_in_extra_args_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="A split needs RPC workers"):
        rpc_args((), (1, 1))
    with pytest.raises(InvalidInputError, match="none negative"):
        rpc_args(("10.0.0.2:1",), (-1, 1))
    extra = LaunchParams(model=GGUF, port=1, extra_args=("--rpc", "10.0.0.9:1"))
    assert "--rpc cannot go in the extra arguments" in refusal(EngineId.LLAMA_CPP, extra)


def test_other_engines_refuse_rpc_workers() -> None:
    params = LaunchParams(model="/m", port=1, rpc=("10.0.0.2:1",))
    assert "does not take RPC workers (rpc)" in refusal(EngineId.VLLM, params)


def test_detection_reports_the_rpc_server_beside_llama_server() -> None:
    def host(files: dict[str, str]) -> FakeHost:
        return FakeHost(
            "Linux",
            "x86_64",
            env={"PATH": "/opt/llama/bin", "HOME": "/home/u"},
            files={"/opt/llama/bin/llama-server": "", **files},
            commands={
                ("/opt/llama/bin/llama-server", "--version"): recorded(
                    "llama-server-version-linux-old.txt"
                )
            },
        )

    def worker(files: dict[str, str]) -> str | None:
        hits = detect_engines(host(files), catalog()).found
        return next(h for h in hits if h.id == EngineId.LLAMA_CPP).rpc_server

    assert worker({}) is None
    assert worker({"/opt/llama/bin/rpc-server": ""}) == "/opt/llama/bin/rpc-server"
    assert worker({"/opt/llama/bin/ggml-rpc-server": ""}) == "/opt/llama/bin/ggml-rpc-server"
