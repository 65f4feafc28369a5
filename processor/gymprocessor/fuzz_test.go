// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// genFuzzCorpus rewrites testdata/fuzz/FuzzProcessOTLP from the hostile
// shapes of hostile_test.go (go test -run TestGenFuzzCorpus -gen-fuzz-corpus).
var genFuzzCorpus = flag.Bool("gen-fuzz-corpus", false, "rewrite testdata/fuzz/FuzzProcessOTLP")

// hostileSyntheticAttr marks the spans §4.4 synthesizes; they are the only spans
// the processor may add.
const hostileSyntheticAttr = "nemo.gym.synthetic"

func hostileIsSynthetic(s ptrace.Span) bool {
	v, ok := s.Attributes().Get(hostileSyntheticAttr)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// spanKeys is the multiset of the non-synthetic spans of tds, each named by
// span id, parent-free name and kind (the processor rewrites trace ids,
// parents of cut roots and attributes, never these).
func spanKeys(tds ...ptrace.Traces) map[string]int {
	out := map[string]int{}
	for _, td := range tds {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			sss := td.ResourceSpans().At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					s := spans.At(k)
					if hostileIsSynthetic(s) {
						continue
					}
					sid := s.SpanID()
					out[hex.EncodeToString(sid[:])+"|"+strconv.Itoa(int(s.Kind()))+"|"+s.Name()]++
				}
			}
		}
	}
	return out
}

// processAll runs td through a processor made by the factory with cfg (nil:
// the default) and shuts it down, which emits every held span. It fails the
// test when the processor does not return within a generous bound (a hang,
// not a timing assertion).
func processAll(t testing.TB, cfg *Config, batches ...ptrace.Traces) *consumertest.TracesSink {
	t.Helper()
	if cfg == nil {
		cfg = createDefaultConfig().(*Config)
	}
	sink := new(consumertest.TracesSink)
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(componentType), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		if err := p.Start(context.Background(), nil); err != nil {
			done <- err
			return
		}
		for _, td := range batches {
			if err := p.ConsumeTraces(context.Background(), td); err != nil {
				done <- fmt.Errorf("ConsumeTraces: %w", err)
				return
			}
		}
		done <- p.Shutdown(context.Background())
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the processor hung: ConsumeTraces/Shutdown did not return within 2 minutes")
	}
	return sink
}

// checkSameSpans fails when the non-synthetic spans out differ from the
// spans in (as a multiset).
func checkSameSpans(t testing.TB, in map[string]int, sink *consumertest.TracesSink) {
	t.Helper()
	out := spanKeys(sink.AllTraces()...)
	var diff []string
	for k, n := range in {
		if out[k] != n {
			diff = append(diff, fmt.Sprintf("%s: in %d, out %d", k, n, out[k]))
		}
	}
	for k, n := range out {
		if _, ok := in[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: in 0, out %d", k, n))
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		if len(diff) > 10 {
			diff = append(diff[:10], fmt.Sprintf("... %d more", len(diff)-10))
		}
		t.Fatalf("non-synthetic spans in != out:\n%v", diff)
	}
}

// FuzzProcessOTLP: any OTLP protobuf request body that pdata accepts goes
// through the gym processor without a panic or a hang, and every
// non-synthetic span leaves exactly once (design §4). The input is also fed
// split into one batch per ResourceSpans in reverse, to vary arrival order.
// Seeds: the golden inputs of ../../testdata and testdata/fuzz/FuzzProcessOTLP
// (hostile shapes: cycles, self-parents, zero and duplicate ids, deep chains).
func FuzzProcessOTLP(f *testing.F) {
	goldens, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*", "input.json"))
	for _, g := range goldens {
		td := readTraces(f, g)
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			return
		}
		in := spanKeys(td)

		whole := ptrace.NewTraces()
		td.CopyTo(whole)
		checkSameSpans(t, in, processAll(t, nil, whole))

		var batches []ptrace.Traces
		for i := td.ResourceSpans().Len() - 1; i >= 0; i-- {
			b := ptrace.NewTraces()
			td.ResourceSpans().At(i).CopyTo(b.ResourceSpans().AppendEmpty())
			batches = append(batches, b)
		}
		checkSameSpans(t, in, processAll(t, nil, batches...))
	})
}

// TestGenFuzzCorpus writes the hostile shapes, small, as the committed seed
// corpus of FuzzProcessOTLP (only with -gen-fuzz-corpus).
func TestGenFuzzCorpus(t *testing.T) {
	if !*genFuzzCorpus {
		t.Skip("-gen-fuzz-corpus not set")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzProcessOTLP")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	for name, td := range map[string]ptrace.Traces{
		"chain_evidence_top":    chainTraces(50, true),
		"chain_evidence_bottom": chainTraces(50, false),
		"cycle":                 cycleTraces(),
		"zero_ids":              zeroIDTraces(),
		"duplicate_ids":         duplicateIDTraces(),
		"many_rollouts":         manyRolloutTraces(0, 20),
		"wide_trace":            wideTraces(40),
	} {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
