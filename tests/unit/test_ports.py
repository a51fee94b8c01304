"""Binding a port, and naming who holds it when it is taken."""

from __future__ import annotations

import os

import pytest

from roundhouse.core.ports import PortInUseError, bind_listener, port_owner


def test_port_zero_binds_a_free_port() -> None:
    sock = bind_listener("127.0.0.1", 0)
    try:
        assert sock.getsockname()[1] > 0
    finally:
        sock.close()


def test_taken_port_names_its_owner() -> None:
    holder = bind_listener("127.0.0.1", 0)
    port = holder.getsockname()[1]
    try:
        with pytest.raises(PortInUseError) as info:
            bind_listener("127.0.0.1", port)
        assert info.value.port == port
        owner = port_owner(port)
        if owner is not None:  # None only where the OS hides sockets (macOS without root)
            assert owner.pid == os.getpid()
            assert str(owner.pid) in str(info.value)
    finally:
        holder.close()
