// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// readOTLPJSON reads OTLP/JSON lines (upstream's file exporter: one
// ExportTraceServiceRequest a line) from r, named name in what it skips,
// and hands each line's spans to s as one batch.
func readOTLPJSON(name string, r io.Reader, s sink) error {
	var um ptrace.JSONUnmarshaler
	lr := newLineReader(r, maxLineBytes)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		if l.tooLong {
			s.skip(skipped{name, l.number, fmt.Sprintf("a line longer than %d MiB", maxLineBytes>>20)})
			continue
		}
		if len(bytes.TrimSpace(l.text)) == 0 {
			continue
		}
		td, err := um.UnmarshalTraces(l.text)
		if err != nil {
			s.skip(skipped{name, l.number, reason(l, "not OTLP/JSON traces: "+shortError(err))})
			continue
		}
		if td.SpanCount() == 0 {
			s.skip(skipped{name, l.number, reason(l, "no spans in this line")})
			continue
		}
		if err := s.batch(td); err != nil {
			return err
		}
	}
}

// shortError is err's text cut to one short line for the summary.
func shortError(err error) string {
	const maxLen = 120
	msg := err.Error()
	if i := strings.Index(msg, ", error found in #"); i >= 0 { // jsoniter's context, which repeats the line
		msg = msg[:i]
	}
	if i := bytes.IndexByte([]byte(msg), '\n'); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > maxLen {
		msg = msg[:maxLen] + "…"
	}
	return msg
}
