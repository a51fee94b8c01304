"""Fit estimates asked lazily, a few at a time, and kept per key for the page's tables."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from functools import partial

from PySide6.QtCore import QObject, Signal

from roundhouse.api.fit import FitQuery, ModelFit
from roundhouse.gui.call import Call, Failure
from roundhouse.gui.calls.models import ModelsCalls
from roundhouse.gui.calls.op import Ops
from roundhouse.gui.widgets.models_words import ESTIMATING, Badge, failed_badge, fit_badge

# Each estimate may read a GGUF header over HTTP: a few at once keep the daemon responsive.
MAX_IN_FLIGHT = 3


def repo_key(repo: str, revision: str = "main", group: str | None = None) -> str:
    """The cache key of a repository (the daemon's pick of group) or of one of its groups."""
    return f"{repo}@{revision}" + (f"#{group}" if group is not None else "")


def library_key(model_id: str) -> str:
    return f"library:{model_id}"


class FitCache(QObject):
    """`request(key, query)` asks once per key; `changed(key)` says its badge moved on.

    Answers stay until `clear()` (the daemon or its hardware changed): a failure too, so a
    repository the estimate cannot read is not asked again on every scroll."""

    changed = Signal(str)

    def __init__(self, calls: ModelsCalls, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ops = Ops(self)
        self._calls = calls
        self._fits: dict[str, ModelFit] = {}
        self._failures: dict[str, Failure] = {}
        self._queued: OrderedDict[str, FitQuery] = OrderedDict()
        self._in_flight: dict[str, Call] = {}
        self._generation = 0

    def request(self, key: str, query: FitQuery, *, first: bool = False) -> None:
        """Ask for it unless known or asked; `first`: before what is queued already."""
        if key in self._fits or key in self._failures or key in self._in_flight:
            return
        self._queued[key] = query
        if first:
            self._queued.move_to_end(key, last=False)
        self.changed.emit(key)
        self._pump()

    def drop_queued(self, keys: Iterable[str]) -> None:
        """Forget these if not asked yet (rows scrolled away before their turn)."""
        for key in keys:
            if self._queued.pop(key, None) is not None:
                self.changed.emit(key)

    def clear(self) -> None:
        """Forget every answer: the next request asks again."""
        self._generation += 1
        keys = set(self._fits) | set(self._failures) | set(self._queued) | set(self._in_flight)
        self._fits.clear()
        self._failures.clear()
        self._queued.clear()
        self._in_flight.clear()
        for key in keys:
            self.changed.emit(key)

    def fit(self, key: str) -> ModelFit | None:
        return self._fits.get(key)

    def badge(self, key: str) -> Badge | None:
        """None while not asked; 'estimating…' while queued or asked."""
        if (fit := self._fits.get(key)) is not None:
            return fit_badge(fit.report)
        if (failure := self._failures.get(key)) is not None:
            return failed_badge(str(failure))
        if key in self._queued or key in self._in_flight:
            return ESTIMATING
        return None

    def _pump(self) -> None:
        while self._queued and len(self._in_flight) < MAX_IN_FLIGHT:
            key, query = self._queued.popitem(last=False)
            call = self._calls.fit(query)
            self._in_flight[key] = call
            generation = self._generation
            self._ops.run(
                call,
                partial(self._on_fit, key, generation),
                on_failure=partial(self._on_fail, key, generation),
            )

    def _on_fit(self, key: str, generation: int, fit: ModelFit) -> None:
        if generation == self._generation:
            self._in_flight.pop(key, None)
            self._fits[key] = fit
            self.changed.emit(key)
        self._pump()

    def _on_fail(self, key: str, generation: int, failure: Failure) -> None:
        if generation == self._generation:
            self._in_flight.pop(key, None)
            # No answer from the daemon at all (not connected): ask again when next shown.
            if failure.status is not None:
                self._failures[key] = failure
            self.changed.emit(key)
        self._pump()
