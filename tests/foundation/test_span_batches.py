"""How a process's spans leave it (servicekit.tracing.batching): in batches of 2,048, so a
burst of spans (the relay's, one per row) costs a quarter of the export requests; an
operator's OTEL_BSP_* setting still rules."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from servicekit import tracing


class _Batches(SpanExporter):
    """Notes the size of every batch it is given."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.sizes.append(len(spans))
        return SpanExportResult.SUCCESS


def _batch_sizes(spans: int) -> list[int]:
    exporter = _Batches()
    processor = tracing.batching(exporter)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    for _ in range(spans):
        provider.get_tracer("test").start_span("a").end()
    processor.force_flush()
    provider.shutdown()
    return exporter.sizes


def test_spans_leave_in_batches_of_2048_so_a_burst_costs_fewer_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", raising=False)
    monkeypatch.delenv("OTEL_BSP_MAX_QUEUE_SIZE", raising=False)
    sizes = _batch_sizes(3000)
    assert sum(sizes) == 3000
    assert max(sizes) == tracing.EXPORT_BATCH == 2048


def test_an_operator_s_batch_setting_still_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "100")
    sizes = _batch_sizes(300)
    assert sum(sizes) == 300
    assert max(sizes) == 100
