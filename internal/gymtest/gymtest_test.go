// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// flat is td with its attributes as maps (the golden inputs were written
// from Go maps, in no particular order).
func flat(td ptrace.Traces) []any {
	var out []any
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				s := ss.Spans().At(k)
				out = append(out, map[string]any{
					"resource": rs.Resource().Attributes().AsRaw(), "resource_index": i, "scope": ss.Scope().Name(),
					"trace": s.TraceID().String(), "span": s.SpanID().String(), "parent": s.ParentSpanID().String(),
					"name": s.Name(), "kind": s.Kind(), "start": s.StartTimestamp(), "end": s.EndTimestamp(),
					"attributes": s.Attributes().AsRaw(),
				})
			}
		}
	}
	return out
}

// TestBuildMakesTheGoldenInputs: Build and Rollout make the golden inputs of
// ../../testdata that the gym processor's scenarios were drawn with (the
// same spans, resources and order), so its tests can move here without a
// golden changing.
func TestBuildMakesTheGoldenInputs(t *testing.T) {
	rollouts := func(ids []string, o func(r string) RolloutOptions) []Span {
		var s []Span
		for _, r := range ids {
			s = append(s, Rollout(r, o(r))...)
		}
		return s
	}
	for name, spans := range map[string][]Span{
		"default_preset_3_rollouts": append(rollouts([]string{"0-0", "1-0", "2-0"}, func(string) RolloutOptions {
			return RolloutOptions{Observability: true, DispatchParent: "job", Trace: "job"}
		}), Job("job")),
		"per_rollout_preset": rollouts([]string{"0-0", "0-1", "1-0"}, func(r string) RolloutOptions {
			return RolloutOptions{Observability: true, PerRollout: true, Trace: "t-" + r}
		}),
		"observability_off": append(rollouts([]string{"0-0", "1-0"}, func(string) RolloutOptions {
			return RolloutOptions{DispatchParent: "job", Trace: "job"}
		}), Job("job")),
		"rollout_split_across_traces": Rollout("8-0", RolloutOptions{Observability: true, PerRollout: true, NoClient: true, Trace: "t-8-0"}),
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", name, "input.json"))
			require.NoError(t, err)
			want, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
			require.NoError(t, err)
			assert.Equal(t, flat(want), flat(Build(Processes(), ProcessOrder(), spans)))
		})
	}
}

// TestRolloutModelCalls: each model call is a CLIENT span, a SERVER span
// and its two ASGI spans, with ids of their own.
func TestRolloutModelCalls(t *testing.T) {
	one := Rollout("0-0", RolloutOptions{Observability: true, Trace: "job"})
	three := Rollout("0-0", RolloutOptions{Observability: true, Trace: "job", ModelCalls: 3, Offset: 10})
	assert.Len(t, three, len(one)+2*4)
	ids := map[string]bool{}
	for _, s := range three {
		assert.False(t, ids[s.ID], "id %s twice", s.ID)
		ids[s.ID] = true
		assert.GreaterOrEqual(t, s.Start, int64(10))
	}
	for _, id := range []string{"0-0/client-model-3", "0-0/model-server-3"} {
		assert.True(t, ids[id], id)
	}
	for _, s := range three {
		if s.ID == "0-0/model-server-3" {
			assert.Equal(t, "0-0/client-model-3", s.Parent)
		}
	}
}

func TestFuzzSeedsReadsWhatGoWrites(t *testing.T) {
	dir := t.TempDir()
	want := []byte("\x00\n\xff\"a\\")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(want))+")\n"), 0o600))
	got, err := FuzzSeeds(dir)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{want}, got)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte("go test fuzz v1\nstring(\"x\")\n"), 0o600))
	_, err = FuzzSeeds(dir)
	assert.ErrorContains(t, err, "b:")
}
