// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// sentinel is a one-line console span appended to every fuzz input.
const sentinel = `(sentinel) {"name": "sentinel", "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x00000000000000ff", "trace_state": "[]"}, "kind": "SpanKind.INTERNAL", "parent_id": null, "start_time": "2026-08-21T12:00:00.100000Z", "end_time": "2026-08-21T12:00:00.200000Z", "status": {"status_code": "UNSET"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {}, "schema_url": ""}}`

// FuzzConsole: whatever precedes it, the console reader never fails or
// panics on input, names skipped lines within the input, gives every span
// its ids, and still reads a well-formed span line that follows: nothing
// before a span can swallow it.
func FuzzConsole(f *testing.F) {
	for _, name := range []string{"console_one_line", "console_multi_line", "console_torn_and_garbage"} {
		b, err := os.ReadFile(filepath.Join("testdata", name, "gym.log"))
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte("(a) {\n(a)     \"name\": \"x\",\n"))
	f.Add([]byte("{\n}\n{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append(bytes.Clone(data), '\n')
		in = append(in, sentinel...)
		in = append(in, '\n')
		lines := bytes.Count(in, []byte("\n"))
		rec := &recorder{}
		if err := readConsole("fuzz.log", bytes.NewReader(in), rec); err != nil {
			t.Fatalf("readConsole failed: %v", err)
		}
		for _, s := range rec.skipped {
			if s.Line < 1 || s.Line > lines {
				t.Fatalf("skipped line %d of %d lines", s.Line, lines)
			}
		}
		var last ptrace.Span
		n := 0
		for _, td := range rec.batches {
			rss := td.ResourceSpans()
			for i := 0; i < rss.Len(); i++ {
				sss := rss.At(i).ScopeSpans()
				for j := 0; j < sss.Len(); j++ {
					spans := sss.At(j).Spans()
					for k := 0; k < spans.Len(); k++ {
						last = spans.At(k)
						n++
						if last.SpanID().IsEmpty() {
							t.Fatalf("a span without an id: %q", last.Name())
						}
					}
				}
			}
		}
		if n == 0 || last.Name() != "sentinel" {
			t.Fatalf("the sentinel span after the input was not read last (%d spans)", n)
		}
	})
}
