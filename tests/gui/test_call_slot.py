"""CallSlot: a section's one call at a time, busy from its start until its handlers ran."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from roundhouse.gui.call import Call, CallSlot, Failure


def test_busy_from_the_start_until_after_the_handlers(qapp: QApplication) -> None:
    seen: list[tuple[str, bool]] = []
    slot: CallSlot = CallSlot(lambda: seen.append(("change", slot.busy)))
    assert not slot.busy

    first = Call("read")
    slot.run(first, lambda result: seen.append((f"ok {result}", slot.busy)), lambda _: None)
    assert slot.busy and seen == [("change", True)]
    first.succeed(7)
    # The handler sees the slot still busy; the change after it sees it free.
    assert seen[1:] == [("ok 7", True), ("change", False)] and not slot.busy

    second = Call("save")
    failures: list[Failure] = []
    slot.run(second, lambda _: None, failures.append)
    assert slot.busy
    second.fail(Failure("Refused", "port taken", 422))
    assert not slot.busy and [f.detail for f in failures] == ["port taken"]
    assert seen[-1] == ("change", False)
