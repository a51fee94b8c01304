"""The Pair a machine dialog against two real daemons: a code shown on one, typed into the
other's dialog; a wrong code is said in words; the pair is made and its fingerprint shown."""

from __future__ import annotations

from pathlib import Path

import qasync

from roundhouse.api.peers import PeerInfo
from roundhouse.gui.calls.peers import PeersCalls
from roundhouse.gui.daemon_bridge import ConnectionState, DaemonBridge
from roundhouse.gui.dialogs.pair_dialog import PairDialog, shown_fingerprint
from tests.gui.conftest import close_bridge, wait_until
from tests.support.peers import peer_daemon, peer_port, peers_of


def test_a_code_shown_on_one_pairs_the_other(qloop: qasync.QEventLoop, tmp_path: Path) -> None:
    with (
        peer_daemon(tmp_path / "alpha", "alpha") as alpha,
        peer_daemon(tmp_path / "beta", "beta") as beta,
    ):
        bridges = [DaemonBridge(d.home, auto_start=False) for d in (alpha, beta)]
        shows = PairDialog(PeersCalls(bridges[0]))
        types = PairDialog(PeersCalls(bridges[1]))
        paired: list[PeerInfo] = []
        types.paired.connect(paired.append)

        async def run() -> None:
            for bridge in bridges:
                bridge.start()
            await wait_until(
                lambda: all(b.state == ConnectionState.CONNECTED for b in bridges), 20, "connected"
            )
            shows.show()
            shows.show_code_button.click()
            await wait_until(lambda: shows.code_label.isVisible(), 10, "the code")
            code = shows.code_label.text()
            assert len(code) == 11 and code[5] == "-"
            assert "compare them" in shows.code_details.text()
            # Counted down: valid ten minutes, once.
            left = shows.countdown_label.text()
            assert left.startswith(("Valid for 9:", "Valid for 10:00")), left
            assert left.endswith("more, once.")
            shows._expires_at = 0.0
            await wait_until(lambda: "expired" in shows.countdown_label.text(), 5, "the expiry")

            types.show()
            assert not types.pair_button.isEnabled()
            types.address_edit.setText("127.0.0.1:http")
            types.code_edit.setText(code)
            types.pair_button.click()
            assert "is not a port" in types.error_text()

            address = f"127.0.0.1:{peer_port(alpha)}"
            types.address_edit.setText(address)
            wrong = ("0" if code[0] != "0" else "1") + code[1:]
            types.code_edit.setText(wrong)
            types.pair_button.click()
            await wait_until(lambda: bool(types.error_text()), 30, "the refusal")
            assert "Wrong pairing code" in types.error_text()
            assert types.pair_button.isEnabled()

            types.code_edit.setText(code.lower())
            types.pair_button.click()
            await wait_until(lambda: bool(paired), 30, "paired")
            assert "Paired with <b>alpha</b>" in types.result_label.text()
            assert shown_fingerprint(paired[0].fingerprint) in types.result_label.text()
            assert types.code_edit.text() == ""

        try:
            qloop.run_until_complete(run())
        finally:
            shows.close()
            types.close()
            for bridge in bridges:
                close_bridge(qloop, bridge)
        assert [p["name"] for p in peers_of(beta)] == ["alpha"]
        assert [p["name"] for p in peers_of(alpha)] == ["beta"]
