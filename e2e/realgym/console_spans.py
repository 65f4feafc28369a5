# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""One set of spans, exported by the real OpenTelemetry Python SDK twice (issue #17).

Usage: python console_spans.py CONSOLE_FILE

Every span goes to the SDK's ConsoleSpanExporter with the formatter Gym's console mode
uses (one ``ReadableSpan.to_json(indent=None)`` line a span) into CONSOLE_FILE, and over
OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (the collector under test, whose gymspans
exporter writes the same spans in its console format). e2e/realgym_console_test.go
compares the two, key by key and format by format (SPEC section 5.2).

The spans cover what the console shape can hold: every kind, a root and children, a
remote parent with a trace state, attributes of every type (arrays too), strings that
need escaping, events with and without attributes, an exception event, a link with
attributes, every status, a span with a rollout id in a ``/ng-rollout/`` URL.
"""

import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.trace import set_span_in_context


def main(console_path: str) -> None:
    resource = Resource.create(
        {
            "service.name": "nemo-gym/example_single_tool_call",
            "nemo.run.id": "consolerun1",
            "nemo.gym.server.type": "resources_servers",
            "dl.rank": 0,
            "dl.world_size": 1,
            "host.gpu.count": 0,
            "process.pid": 4242,
            "sampled.ratio": 0.25,
            "nemo.gym.flag": True,
        }
    )
    provider = TracerProvider(resource=resource)
    with open(console_path, "w", encoding="utf-8") as out:
        provider.add_span_processor(
            SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=lambda s: s.to_json(indent=None) + "\n"))
        )
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        tracer = provider.get_tracer("nemo.lens.helpers", "0.2.0")

        remote = SpanContext(
            trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
            span_id=0x00F067AA0BA902B7,
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
            trace_state=TraceState([("gym", "a1"), ("vendor", "x-y")]),
        )
        with tracer.start_as_current_span(
            "POST /verify", context=set_span_in_context(NonRecordingSpan(remote)), kind=SpanKind.SERVER
        ) as server:
            server.set_attribute("url.path", "/ng-rollout/0-0/verify")
            server.set_attribute("http.request.method", "POST")
            server.set_attribute("http.response.status_code", 200)
            with tracer.start_as_current_span("gym.verify") as verify:
                verify.set_attribute("nemo.gym.rollout.id", "0-0")
                verify.set_attribute("nemo.gym.server.name", "example_single_tool_call")
                verify.set_attribute("reward", 1.0)
                verify.set_attribute("ratio", 0.1)
                verify.set_attribute("big", 2**53 + 1)
                verify.set_attribute("negative", -7)
                verify.set_attribute("ok", False)
                verify.set_attribute("tags", ["a", "b\"c", "d\\e"])
                verify.set_attribute("ints", [1, 2, 3])
                verify.set_attribute("floats", [0.5, 1.0, 1e-7])
                verify.set_attribute("bools", [True, False])
                verify.set_attribute("empty", "")
                verify.set_attribute("text.unicode", "héllo ✓ \u2028 tab\tnewline\n<script>")
                verify.add_event("checkpoint")
                verify.add_event("scored", {"reward": 1.0, "attempts": 2, "why": "matched", "final": True})
                verify.set_status(Status(StatusCode.OK))
            with tracer.start_as_current_span("HTTP POST", kind=SpanKind.CLIENT) as client:
                client.set_attribute("url.full", "http://127.0.0.1:9/ng-rollout/0-0/judge")
                client.set_attribute("http.request.method", "POST")
                try:
                    raise ValueError("judge said \"no\"")
                except ValueError as exc:
                    client.record_exception(exc)
                    client.set_status(Status(StatusCode.ERROR, "judge said \"no\""))
            with tracer.start_as_current_span("gym.sandbox.exec") as failed:
                failed.set_status(Status(StatusCode.ERROR))

        other = SpanContext(trace_id=0x1, span_id=0x2, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        with tracer.start_as_current_span(
            "queue publish", kind=SpanKind.PRODUCER, links=[Link(other, {"nemo.gym.link.type": "previous_attempt", "n": 1})]
        ):
            with tracer.start_as_current_span("queue consume", kind=SpanKind.CONSUMER):
                pass
        provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
