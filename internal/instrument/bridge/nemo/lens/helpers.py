# Copyright The otelcol-gym Authors
# SPDX-License-Identifier: Apache-2.0
"""The span primitives Gym's call sites use (otelcol-gym's bridge; see nemo/lens/__init__.py).

As Gym's own docs and nemo_gym/telemetry/spans.py describe them: ``managed_span`` starts
an INTERNAL span (no kind) from the tracer ``nemo.lens.helpers`` when its group is
enabled and yields None otherwise; it makes the span current, records an exception (an
``exception`` event, status ERROR with the exception's text) and always ends it.
``safe_set_span_attributes`` drops None and non-scalar values and redacts the values of
a few sensitive keys.
"""

import functools
import inspect
from contextlib import contextmanager

from opentelemetry import context as _context
from opentelemetry import trace as _trace
from opentelemetry.trace import StatusCode

from nemo.lens.state import is_span_group_enabled

TRACER_NAME = "nemo.lens.helpers"
DEFAULT_REDACT_KEYS = frozenset({"prompt", "input_text", "output_text", "text", "password", "token", "secret", "key"})
REDACTED = "[REDACTED]"


def redact_value(key: str, value, redact_keys: frozenset = DEFAULT_REDACT_KEYS):
    return REDACTED if key in redact_keys else value


def safe_set_span_attributes(span, attributes, redact_keys=None) -> None:
    if span is None or not attributes:
        return
    keys = DEFAULT_REDACT_KEYS if redact_keys is None else frozenset(redact_keys)
    for key, value in attributes.items():
        if value is None or not isinstance(value, (str, bool, int, float)):
            continue
        span.set_attribute(key, redact_value(key, value, keys))


@contextmanager
def _current_span(name, tracer, record_exception, attributes):
    tracer = tracer or _trace.get_tracer(TRACER_NAME)
    span = tracer.start_span(name)
    safe_set_span_attributes(span, attributes)
    token = _context.attach(_trace.set_span_in_context(span))
    try:
        yield span
    except Exception as exc:
        if record_exception:
            span.record_exception(exc)
        span.set_status(StatusCode.ERROR, str(exc))
        raise
    finally:
        _context.detach(token)
        span.end()


@contextmanager
def managed_span(group, name, tracer=None, **attributes):
    if not is_span_group_enabled(group):
        yield None
        return
    with _current_span(name, tracer, True, attributes) as span:
        yield span


@contextmanager
def span_cm(name, tracer=None, record_exception=True, **attributes):
    with _current_span(name, tracer, record_exception, attributes) as span:
        yield span


def trace_fn(group, name, tracer=None):
    def decorator(func):
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args, **kwargs):
                with managed_span(group, name, tracer):
                    return await func(*args, **kwargs)

            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with managed_span(group, name, tracer):
                return func(*args, **kwargs)

        return wrapper

    return decorator
