// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// TestGenAIEndToEnd (design §4.7): gymsim's model calls, through gym and
// gymcapture, reach the rollout files and the OTLP a backend gets with their
// capture lines' GenAI attributes, and the metrics' token sums equal the
// captures'.
func TestGenAIEndToEnd(t *testing.T) {
	for _, preset := range []string{"default", "per_rollout"} {
		t.Run(preset, func(t *testing.T) {
			t.Parallel()
			tmpl, err := os.ReadFile(filepath.Join("testdata", "genai_collector.yaml"))
			require.NoError(t, err)
			dir := t.TempDir()
			captureDir := filepath.Join(dir, "captures")
			p := newPorts(t)
			cfgPath := writeFile(t, dir, "collector.yaml", p.expand(string(tmpl), captureDir))
			col := startCollector(t, p, nil, "--config", cfgPath)
			args := []string{
				"--preset=" + preset, "--rollouts=30", "--concurrency=6", "--model-calls=3", "--run-id=genai0001",
				"--batch-delay=200ms", "--blocking", "--capture-dir=" + captureDir,
				"--truth=" + filepath.Join(dir, "truth.jsonl"), fmt.Sprintf("--endpoint=127.0.0.1:%d", p.GRPC),
			}
			out, err := runCmd(t, 2*time.Minute, nil, gymsimBinary(t), args...)
			require.NoError(t, err, "gymsim:\n%s", out)
			require.NoError(t, col.stop(), "collector exit")
			checkGenAI(t, captureDir, filepath.Join(dir, "otlp-traces.jsonl"), filepath.Join(captureDir, "otel-metrics.jsonl"))
		})
	}
}

// genAICapture is what checkGenAI compares of a capture line.
type genAICapture struct {
	line     modelcall.Line
	joined   bool
	standing int // spans that stand for the call (carry its GenAI attributes)
}

// checkGenAI checks a run's output against its capture files: every
// model-call span of the rollout files and of the OTLP traces file
// (otlpPath, "" to skip) carries its capture line's id, exactly one span of
// each line carries its GenAI operation, tokens, models and response id
// (design §4.7), and the others no gen_ai.* attribute; every capture line
// joined some span; the token sums of the metrics file (metricsPath, "" to
// skip) equal the captures'.
func checkGenAI(t *testing.T, captureDir, otlpPath, metricsPath string) {
	t.Helper()
	captures := map[string]*genAICapture{} // by model_call_id
	var wantIn, wantOut int64
	files, err := filepath.Glob(filepath.Join(captureDir, "*.capture.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no capture files")
	for _, f := range files {
		eachFileLine(t, f, func(b []byte) {
			l, ok := modelcall.ParseLine(b)
			require.True(t, ok, "capture line %s", b)
			captures[l.ModelCallID] = &genAICapture{line: l}
			if l.InputTokens != nil {
				wantIn += *l.InputTokens
			}
			if l.OutputTokens != nil {
				wantOut += *l.OutputTokens
			}
		})
	}

	// The rollout files.
	spanFiles, err := filepath.Glob(filepath.Join(captureDir, "*.spans.jsonl"))
	require.NoError(t, err)
	var spans []outSpan
	for _, f := range spanFiles {
		spans = append(spans, readJSONLines[outSpan](t, f)...)
	}
	calls := checkModelCallSpans(t, "rollout files", consoleSpans(spans), captures)
	assert.Positive(t, calls)
	for id, c := range captures {
		assert.True(t, c.joined, "capture line %s joined no span", id)
	}

	if otlpPath != "" {
		for _, c := range captures {
			c.joined, c.standing = false, 0
		}
		var all []modelCallSpan
		eachFileLine(t, otlpPath, func(b []byte) {
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
			require.NoError(t, err)
			all = append(all, otlpSpans(td)...)
		})
		assert.Equal(t, calls, checkModelCallSpans(t, "OTLP", all, captures), "model-call spans in the OTLP and in the rollout files")
	}

	if metricsPath != "" { // "": a replay, which writes no metrics
		gotIn, gotOut := metricTokenSums(t, metricsPath)
		assert.Equal(t, wantIn, gotIn, "input tokens: metrics vs captures")
		assert.Equal(t, wantOut, gotOut, "output tokens: metrics vs captures")
	}
	t.Logf("%d capture lines, %d model-call spans, tokens in %d out %d", len(captures), calls, wantIn, wantOut)
}

// modelCallSpan is a span as checkModelCallSpans needs it.
type modelCallSpan struct {
	desc       string
	span       modelcall.Span
	service    string
	peer       string
	attrs      map[string]any
	serverType string
}

// checkModelCallSpans checks every model-call span against the capture line
// its nemo.gym.model_call.id names, and that every one has one; returns how
// many there are.
func checkModelCallSpans(t *testing.T, where string, spans []modelCallSpan, captures map[string]*genAICapture) int {
	t.Helper()
	types := map[string]string{}
	for _, s := range spans {
		if s.service != "" && s.serverType != "" {
			types[s.service] = s.serverType
		}
	}
	n := 0
	for _, s := range spans {
		s.span.CalleeType = types[s.peer]
		s.span.Service, s.span.PeerService = s.service, s.peer
		id, _ := s.attrs[gymconv.ModelCallIDAttribute].(string)
		if synthetic, _ := s.attrs[gymconv.SyntheticAttribute].(bool); synthetic && id != "" {
			// The call's chat span (design §4.7): it carries the GenAI
			// attributes, named as the conventions name the call.
			c := captures[id]
			if !assert.NotNil(t, c, "%s: chat span %s has no capture line (nemo.gym.model_call.id %q)", where, s.desc, id) {
				continue
			}
			c.standing++
			checkCallAttributes(t, where, s, c.line)
			continue
		}
		if modelcall.KindOf(&s.span) == modelcall.NotModelCall {
			continue
		}
		n++
		c := captures[id]
		if !assert.NotNil(t, c, "%s: model-call span %s has no capture line (nemo.gym.model_call.id %q): %v %v", where, s.desc, id, s.attrs, s.serverType) {
			continue
		}
		c.joined = true
		for k := range s.attrs {
			assert.False(t, strings.HasPrefix(k, "gen_ai."), "%s: %s carries %s: the call's attributes are its chat span's", where, s.desc, k)
		}
	}
	for id, c := range captures {
		if c.joined {
			assert.Equal(t, 1, c.standing, "%s: chat spans of capture line %s", where, id)
		}
	}
	return n
}

// checkCallAttributes checks a chat span's attributes against its capture
// line.
func checkCallAttributes(t *testing.T, where string, s modelCallSpan, l modelcall.Line) {
	t.Helper()
	assert.Equal(t, s.attrs[gymconv.RolloutAttribute], s.attrs["gen_ai.conversation.id"], "%s: %s conversation", where, s.desc)
	wantModel := l.RequestModel
	if wantModel == "" {
		wantModel = l.ResponseModel
	}
	if wantModel != "" {
		assert.Equal(t, wantModel, s.attrs["gen_ai.request.model"], "%s: %s request model", where, s.desc)
		assert.Equal(t, "chat "+wantModel, s.span.Name, "%s: %s name", where, s.desc)
	}
	assert.Equal(t, l.Model, s.attrs[gymconv.ModelCallServerAttribute], "%s: %s Gym's model server", where, s.desc)
	if l.InputTokens != nil {
		assert.EqualValues(t, *l.InputTokens, s.attrs["gen_ai.usage.input_tokens"], "%s: %s input tokens", where, s.desc)
		assert.EqualValues(t, *l.OutputTokens, s.attrs["gen_ai.usage.output_tokens"], "%s: %s output tokens", where, s.desc)
	}
	if l.ResponseModel != "" {
		assert.Equal(t, l.ResponseModel, s.attrs["gen_ai.response.model"], "%s: %s response model", where, s.desc)
	}
	if l.ResponseID != "" {
		assert.Equal(t, l.ResponseID, s.attrs["gen_ai.response.id"], "%s: %s response id", where, s.desc)
	}
	if l.Failed() {
		assert.Equal(t, l.ErrorType(), s.attrs["error.type"], "%s: %s error.type", where, s.desc)
	}
}

func consoleSpans(spans []outSpan) []modelCallSpan {
	out := make([]modelCallSpan, 0, len(spans))
	for _, s := range spans {
		rt, _ := s.Resource.Attributes[gymconv.ServerTypeAttribute].(string)
		svc, _ := s.Resource.Attributes[gymconv.ServiceOverrideAttribute].(string)
		if svc == "" {
			svc, _ = s.Resource.Attributes[gymconv.ServiceNameAttribute].(string)
		}
		out = append(out, modelCallSpan{
			desc: s.Name + " " + s.SpanID, service: svc, serverType: rt, peer: s.str("peer.service"), attrs: s.Attributes,
			span: modelcall.Span{
				Name: s.Name, Kind: strings.TrimPrefix(s.Kind, "SpanKind."), ServerType: rt,
				URLPath: s.str("url.path"), HTTPTarget: s.str("http.target"), HTTPRoute: s.str("http.route"),
				URLFull: s.str("url.full"), HTTPURL: s.str("http.url"),
			},
		})
	}
	return out
}

func otlpSpans(td ptrace.Traces) []modelCallSpan {
	var out []modelCallSpan
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		res := rs.Resource().Attributes()
		rt := attrStr(res, gymconv.ServerTypeAttribute)
		svc := gymconv.Service(res, gymconv.DefaultServiceAttributes())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				s := ss.At(k)
				a := s.Attributes()
				kind := strings.ToUpper(strings.TrimPrefix(s.Kind().String(), "Span"))
				attrs := a.AsRaw()
				out = append(out, modelCallSpan{
					desc: s.Name() + " " + s.SpanID().String(), service: svc, serverType: rt, peer: attrStr(a, "peer.service"), attrs: attrs,
					span: modelcall.Span{
						Name: s.Name(), Kind: kind, ServerType: rt,
						URLPath: attrStr(a, "url.path"), HTTPTarget: attrStr(a, "http.target"), HTTPRoute: attrStr(a, "http.route"),
						URLFull: attrStr(a, "url.full"), HTTPURL: attrStr(a, "http.url"),
					},
				})
			}
		}
	}
	return out
}

func attrStr(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// metricTokenSums reads an OTLP/JSON metrics file and returns the sums of
// the last (cumulative) gen_ai.client.token.usage point of each series, by
// token type.
func metricTokenSums(t *testing.T, path string) (in, out int64) {
	t.Helper()
	last := lastHistogramPoints(t, path, "gen_ai.client.token.usage")
	require.NotEmpty(t, last, "no gen_ai.client.token.usage in %s", path)
	for _, dp := range last {
		switch attrStr(dp.Attributes(), "gen_ai.token.type") {
		case "input":
			in += int64(dp.Sum())
		case "output":
			out += int64(dp.Sum())
		}
	}
	return in, out
}

// lastHistogramPoints reads an OTLP/JSON metrics file and returns the last
// (cumulative) point of each series of the histogram name.
func lastHistogramPoints(t *testing.T, path, name string) []pmetric.HistogramDataPoint {
	t.Helper()
	last := map[string]pmetric.HistogramDataPoint{}
	var order []string
	eachFileLine(t, path, func(b []byte) {
		md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(b)
		require.NoError(t, err)
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := 0; j < sms.Len(); j++ {
				ms := sms.At(j).Metrics()
				for k := 0; k < ms.Len(); k++ {
					if ms.At(k).Name() != name {
						continue
					}
					dps := ms.At(k).Histogram().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						dp := dps.At(d)
						key := fmt.Sprint(dp.Attributes().AsRaw())
						p, ok := last[key]
						if !ok {
							order = append(order, key)
						}
						if !ok || dp.Timestamp() >= p.Timestamp() {
							last[key] = dp
						}
					}
				}
			}
		}
	})
	out := make([]pmetric.HistogramDataPoint, 0, len(order))
	for _, k := range order {
		out = append(out, last[k])
	}
	return out
}

func eachFileLine(t *testing.T, path string, f func([]byte)) {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) > 0 {
			f(sc.Bytes())
		}
	}
	require.NoError(t, sc.Err())
}
