// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-gym/otelcol-gym/config"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// The content attributes gymcapture's capture_message_content adds (design
// §4.7), and what gymsim's captures say: its model calls' input and output.
var contentKeys = []string{
	"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
	"input.value", "output.value",
}

const (
	gymsimTask   = "What is the weather?"
	gymsimAnswer = "ok"
)

// contentSink is an OTLP/HTTP traces receiver (a backend, as the forwarding
// exporter sees it) that keeps every span it is sent.
type contentSink struct {
	mu    sync.Mutex
	spans []ptrace.Span
}

func (s *contentSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	var err error
	if r.Header.Get("Content-Encoding") == "gzip" { // the exporter's default
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(r.Body); err == nil {
			body, err = io.ReadAll(zr)
		}
	} else {
		body, err = io.ReadAll(r.Body)
	}
	req := ptraceotlp.NewExportRequest()
	if err == nil {
		err = req.UnmarshalProto(body)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.Traces().ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				s.spans = append(s.spans, span)
			}
		}
	}
	s.mu.Unlock()
	b, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// TestMessageContentForwarded (issue #57, design §4.7): the embedded default
// forwarding gymsim's run to an OTLP backend sends no message content unless
// OTELCOL_GYM_CAPTURE_MESSAGE_CONTENT=true; with it, each model call's span
// that stands for it carries its messages and each rollout's root its task
// and final answer.
func TestMessageContentForwarded(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("content_%v", on), func(t *testing.T) {
			t.Parallel()
			sink := &contentSink{}
			backend := httptest.NewServer(sink) // 127.0.0.1
			defer backend.Close()
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			p := newPorts(t)
			env := []string{"NEMO_GYM_CAPTURE_DIR=" + captureDir, config.ForwardTracesEndpointEnv + "=" + backend.URL + "/v1/traces"}
			if on {
				env = append(env, "OTELCOL_GYM_CAPTURE_MESSAGE_CONTENT=true")
			}
			col := startCollector(t, p, env, embeddedDefaultOn(p)...)
			const rollouts = 8
			out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), "--preset=per_rollout", fmt.Sprintf("--rollouts=%d", rollouts),
				"--concurrency=4", "--model-calls=2", "--run-id=content0001", "--batch-delay=100ms", "--blocking",
				"--capture-dir="+captureDir, "--truth="+filepath.Join(dir, "truth.jsonl"), fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC))
			require.NoError(t, err, "gymsim:\n%s", out)
			require.NoError(t, col.stop(), "collector exit: it drains its forwarding queue")

			sink.mu.Lock()
			defer sink.mu.Unlock()
			require.NotEmpty(t, sink.spans)
			var calls, roots int
			for _, span := range sink.spans {
				attrs := span.Attributes()
				if !on {
					for _, k := range contentKeys {
						_, has := attrs.Get(k)
						assert.False(t, has, "content is opt-in: span %s %q carries %s", span.SpanID(), span.Name(), k)
					}
					for k, v := range attrs.All() {
						assert.NotContains(t, v.AsString(), gymsimTask, "content is opt-in: span %s %q, attribute %s", span.SpanID(), span.Name(), k)
					}
					continue
				}
				if op, _ := attrs.Get("gen_ai.operation.name"); op.Str() == "chat" {
					calls++
					assert.Contains(t, attrStr(attrs, "gen_ai.input.messages"), `"content":"`+gymsimTask+`"`, "span %s %q", span.SpanID(), span.Name())
					if _, failed := attrs.Get("error.type"); failed {
						assert.Empty(t, attrStr(attrs, "gen_ai.output.messages"), "span %s %q: a failed call has no answer", span.SpanID(), span.Name())
					} else {
						assert.Contains(t, attrStr(attrs, "gen_ai.output.messages"), `"content":"`+gymsimAnswer+`"`, "span %s %q", span.SpanID(), span.Name())
					}
				}
				if root, _ := attrs.Get(gymconv.RolloutRootAttribute); root.Bool() {
					roots++
					assert.Equal(t, gymsimTask, attrStr(attrs, "input.value"), "root %s %q: the task", span.SpanID(), span.Name())
					assert.Equal(t, gymsimAnswer, attrStr(attrs, "output.value"), "root %s %q: the answer", span.SpanID(), span.Name())
				}
			}
			if on {
				assert.Equal(t, rollouts*2, calls, "model calls with their messages")
				assert.Equal(t, rollouts, roots, "rollout roots with the task and the answer")
			}
			t.Logf("content %v: %d spans forwarded, %d calls and %d roots with content", on, len(sink.spans), calls, roots)
		})
	}
}
