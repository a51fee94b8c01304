"""Failed benchmark requests grouped by reason with advice, and how a run with failures reads
in its table, its exports and the CLI's views."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console

from roundhouse.api.bench import (
    BenchRequest,
    BenchResult,
    BenchStatus,
    ServingContext,
    counts_line,
    failure_lines,
    progress_words,
    run_name,
    table_rows,
)
from roundhouse.cli.bench_view import compare_view, result_view
from roundhouse.core.bench.ab import arm_warning
from roundhouse.core.bench.export import to_csv, to_markdown
from roundhouse.core.bench.failures import group_failures, reason_of, with_groups
from roundhouse.core.bench.metrics import compute_metrics
from roundhouse.core.bench.records import RequestRecord

SHARED_FULL = "the engine reported an error: Context size has been exceeded."
TOO_LONG = (
    'HTTP 400: {"error":{"code":400,"message":"request (417 tokens) exceeds the available '
    'context size (256 tokens), try increasing it","type":"exceed_context_size_error"}}'
)
REQUEST = BenchRequest(model="tiny", num_prompts=5, max_concurrency=4, input_len=50, output_len=120)


def _record(index: int, error: str | None = None) -> RequestRecord:
    record = RequestRecord(index, 50, 120, sent_s=0.1 * index, error=error)
    if error is None:
        record.choice_s = record.content_s = [0.1 * index + 0.05, 0.1 * index + 0.08]
        record.last_chunk_s = record.end_s = 0.1 * index + 0.1
        record.output_tokens, record.prompt_tokens = 2, 50
    return record


def _result(records: list[RequestRecord], serving: ServingContext | None = None) -> BenchResult:
    metrics = compute_metrics(records, 0.5)
    errors = [r.error for r in records if r.error]
    metrics.failure_groups = group_failures(errors, REQUEST, serving)
    return BenchResult(
        id="0123456789ab",
        created_at=0.0,
        request=REQUEST,
        engine="llama.cpp",
        serving=serving,
        metrics=metrics,
    )


def test_reasons_are_the_engines_words_grouped_with_numbers_aside() -> None:
    assert reason_of(SHARED_FULL) == "Context size has been exceeded."
    assert reason_of(TOO_LONG) == (
        "request (417 tokens) exceeds the available context size (256 tokens), try increasing it"
    )
    assert reason_of("HTTP 502: <html>bad gateway</html>") == "HTTP 502: <html>bad gateway</html>"
    other = TOO_LONG.replace("417", "503")
    # Before the stream starts llama-server says it as an HTTP 500: the same reason.
    early = 'HTTP 500: {"error":{"code":500,"message":"Context size has been exceeded."}}'
    errors = [SHARED_FULL, TOO_LONG, early, other, SHARED_FULL]
    groups = group_failures(errors, REQUEST, None)
    assert [(g.reason.split(" ")[0], g.count) for g in groups] == [("Context", 3), ("request", 2)]


def test_advice_names_the_context_per_slot_and_the_concurrency() -> None:
    serving = ServingContext(slot_ctx=256, slots=4)
    shared, too_long = group_failures([SHARED_FULL, TOO_LONG], REQUEST, serving)
    assert shared.advice is not None and too_long.advice is not None
    # 4 at once of 50 + 120 tokens need 680; 256 holds one at a time.
    assert "context of 256 tokens is shared by its 4 slots" in shared.advice
    assert "at least 680" in shared.advice and "at most 1 at once" in shared.advice
    assert "one slot (256 tokens)" in too_long.advice
    started = ServingContext(ctx_size=1024, parallel=4)
    (said,) = group_failures([TOO_LONG], REQUEST, started)
    assert said.advice is not None and "256 tokens = ctx_size 1024 / parallel 4" in said.advice
    (unknown,) = group_failures([SHARED_FULL], REQUEST, None)
    assert unknown.advice is not None and "lower the maximum concurrency" in unknown.advice
    (none,) = group_failures(["HTTP 401: no key"], REQUEST, serving)
    assert none.advice is None


def test_a_run_with_failures_is_marked_everywhere() -> None:
    records = [_record(0)] + [_record(i, SHARED_FULL) for i in range(1, 5)]
    result = _result(records, ServingContext(slot_ctx=256, slots=4))
    assert result.status is BenchStatus.PARTIAL
    assert counts_line(1, 4) == "1 of 5 succeeded, 4 failed"
    assert progress_words(3, 5, 2) == "3 of 5 done: 1 succeeded, 2 failed"
    lines = failure_lines(result)
    assert lines[0].startswith("1 of 5 succeeded, 4 failed: throughputs")
    assert lines[1] == "4 × Context size has been exceeded."
    rows = dict(table_rows(result))
    assert rows["Output token throughput (tok/s)"].endswith("(successful only)")
    assert "0123456789ab" not in run_name(result) and "llama.cpp" in run_name(result)

    markdown = to_markdown(result)
    assert "PARTIAL: 1 of 5 succeeded, 4 failed" in markdown
    assert "4 × Context size has been exceeded." in markdown and "at least 680" in markdown
    table = dict(csv.reader(io.StringIO(to_csv(result))))
    assert table["status"] == "partial" and table["failed"] == "4"
    assert table["throughput_covers"] == "successful requests only"
    assert table["failure_1_reason"] == "Context size has been exceeded."
    assert table["failure_1_count"] == "4" and "680" in table["failure_1_advice"]
    data = json.loads(result.model_dump_json())
    assert data["status"] == "partial" and data["metrics"]["failure_groups"][0]["count"] == 4

    # An A/B arm with failures says so in the A/B's progress, never a plain "Done".
    warning = arm_warning("llama.cpp", result)
    assert warning == "llama.cpp: 1 of 5 succeeded, 4 failed (Context size has been exceeded.)"

    console = Console(width=200, record=True)
    console.print(result_view(result))
    console.print(compare_view([result, result]))
    text = console.export_text()
    assert "1 of 5 succeeded, 4 failed" in text and "What to change" in text


def test_a_run_where_every_request_failed_has_no_figures() -> None:
    result = _result([_record(i, SHARED_FULL) for i in range(5)])
    assert result.status is BenchStatus.FAILED
    labels = [label for label, _ in table_rows(result)]
    assert "Failed requests" in labels and "Output token throughput (tok/s)" not in labels
    assert failure_lines(result)[0].startswith("Every request failed (5 of 5)")
    assert "FAILED: Every request failed" in to_markdown(result)


def test_a_result_kept_before_the_groups_existed_still_loads() -> None:
    result = _result([_record(0), _record(1, SHARED_FULL)])
    data = json.loads(result.model_dump_json())
    del data["status"], data["serving"]
    del data["metrics"]["failure_groups"]
    old = with_groups(BenchResult.model_validate(data))
    assert old.status is BenchStatus.PARTIAL
    assert [(g.reason, g.count) for g in old.metrics.failure_groups] == [
        ("Context size has been exceeded.", 1)
    ]
