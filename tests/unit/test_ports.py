"""Binding a port, and naming who holds it when it is taken."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from roundhouse.core.infra.ports import (
    BROWSER_BLOCKED_PORTS,
    PortInUseError,
    bind_listener,
    free_port,
    port_owner,
)


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


def test_a_privileged_port_is_named_as_such_not_as_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if os.name == "nt":
        pytest.skip("Windows answers EACCES for a port held exclusively: that one is taken")

    def refuse(self: socket.socket, address: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(socket.socket, "bind", refuse)
    with pytest.raises(PortInUseError) as caught:
        bind_listener("0.0.0.0", 80)
    assert caught.value.privileged
    assert "administrator rights" in str(caught.value) and "1024" in str(caught.value)


def test_a_port_no_browser_reaches_is_chosen_and_a_taken_one_skipped() -> None:
    # The Fetch standard's bad ports (fetch.spec.whatwg.org/#port-blocking) include these.
    assert {6665, 6666, 6667, 6668, 6669, 6697, 10080} <= set(BROWSER_BLOCKED_PORTS)
    assert all(port >= 1024 for port in BROWSER_BLOCKED_PORTS), "no privilege needed"
    held = []
    try:
        first = free_port("127.0.0.1", browser_blocked=True)
        assert first in BROWSER_BLOCKED_PORTS
        held.append(bind_listener("127.0.0.1", first))
        second = free_port("127.0.0.1", browser_blocked=True)
        assert second in BROWSER_BLOCKED_PORTS and second != first
    finally:
        for sock in held:
            sock.close()


def test_when_every_blocked_port_is_taken_any_free_port_is_given() -> None:
    held = []
    try:
        for port in BROWSER_BLOCKED_PORTS:
            try:
                held.append(bind_listener("127.0.0.1", port))
            except PortInUseError:
                continue  # taken by another program already: just as good
        port = free_port("127.0.0.1", browser_blocked=True)
        assert port not in BROWSER_BLOCKED_PORTS
        bind_listener("127.0.0.1", port).close()
    finally:
        for sock in held:
            sock.close()
