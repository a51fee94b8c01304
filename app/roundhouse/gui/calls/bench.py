"""The Benchmark page's calls to the daemon: each a Call answered once, named in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roundhouse.api.bench import AbRequest, BenchRequest, ExportFormat
from roundhouse.gui.call import Call

if TYPE_CHECKING:
    from roundhouse.gui.daemon_bridge import DaemonBridge


class BenchCalls:
    """Start, follow, cancel, list, show, export and delete benchmarks; the gateway's models."""

    def __init__(self, bridge: DaemonBridge) -> None:
        self._bridge = bridge

    def models(self) -> Call:
        """Answers with the GatewayModelList."""
        return self._bridge.call("list the models", lambda c: c.gateway_models())

    def start(self, request: BenchRequest) -> Call:
        """Answers with the BenchProgress of the new job."""
        return self._bridge.call("start the benchmark", lambda c: c.start_bench(request))

    def progress(self, bench_id: str) -> Call:
        return self._bridge.call("follow the benchmark", lambda c: c.bench_progress(bench_id))

    def cancel(self, bench_id: str) -> Call:
        return self._bridge.call("cancel the benchmark", lambda c: c.cancel_bench(bench_id))

    def results(self) -> Call:
        """Answers with the BenchList, newest first."""
        return self._bridge.call("list the benchmark results", lambda c: c.bench_results())

    def result(self, bench_id: str) -> Call:
        """Answers with the BenchResult."""
        return self._bridge.call("read the benchmark result", lambda c: c.bench_result(bench_id))

    def export(self, bench_id: str, fmt: ExportFormat) -> Call:
        """Answers with the exported text."""
        return self._bridge.call(
            "export the benchmark result", lambda c: c.export_bench(bench_id, fmt)
        )

    def delete(self, bench_id: str) -> Call:
        return self._bridge.call("delete the benchmark result", lambda c: c.delete_bench(bench_id))

    def library(self) -> Call:
        """Answers with the LibraryList: the local models."""
        return self._bridge.call("list the local models", lambda c: c.library())

    def start_ab(self, request: AbRequest) -> Call:
        """Answers with the AbProgress of the new A/B run."""
        return self._bridge.call("start the A/B run", lambda c: c.start_ab(request))

    def ab_progress(self, ab_id: str) -> Call:
        return self._bridge.call("follow the A/B run", lambda c: c.ab_progress(ab_id))

    def cancel_ab(self, ab_id: str) -> Call:
        return self._bridge.call("cancel the A/B run", lambda c: c.cancel_ab(ab_id))
