// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"pgregory.net/rapid"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// metricByAttr sums an int64 sum metric per value of attribute key ("" for
// all points).
func metricByAttr(t testing.TB, tel *componenttest.Telemetry, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tel.GetMetric(name)
	if err != nil {
		return out
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	for _, dp := range sum.DataPoints {
		v, _ := dp.Attributes.Value(attributeKey(key))
		out[v.AsString()] += dp.Value
	}
	return out
}

// spansWithRollouts returns one root span per rollout id (span attribute),
// all in run, plus one span per id carried as a resource attribute.
func spansWithRollouts(run string, ids []string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "nemo-gym/simple_agent")
	if run != "" {
		rs.Resource().Attributes().PutStr("nemo.run.id", run)
	}
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	// Trace ids differ by run: the same rollouts in two runs are other spans.
	runHash := sha256.Sum256([]byte(run))
	tid := func(i int) pcommon.TraceID {
		id := pcommon.TraceID{1, byte(i >> 8), byte(i)}
		copy(id[3:], runHash[:13])
		return id
	}
	for i, id := range ids {
		s := spans.AppendEmpty()
		s.SetName("gym.rollout")
		s.SetTraceID(tid(i))
		s.SetSpanID([8]byte{1, byte(i >> 8), byte(i)})
		s.Attributes().PutStr("nemo.gym.rollout.id", id)
	}
	for i, id := range ids {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("nemo.gym.rollout.id", id)
		if run != "" {
			rs.Resource().Attributes().PutStr("nemo.run.id", run)
		}
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName("child")
		s.SetTraceID(tid(i))
		s.SetSpanID([8]byte{2, byte(i >> 8), byte(i)})
		s.SetParentSpanID([8]byte{1, byte(i >> 8), byte(i)})
	}
	return td
}

var hostileIDs = []string{
	"../x", "a/b", ".", "..", "", strings.Repeat("r", 300), "ロールアウト-1", "a\x00b",
	"/etc/passwd", "-leading-dash", ".hidden", "a\\b", "a b", "x\n", "12-3/../../escape",
}

// TestHostileRolloutIDsStayInside exports spans with hostile rollout and run
// ids and a symlink, a directory, a FIFO and a hard link planted under valid
// rollouts' file names, then walks the tree: nothing was created or written
// outside the capture dir, and each rejection was counted.
func TestHostileRolloutIDsStayInside(t *testing.T) {
	for _, template := range []string{"{rollout_id}.spans.jsonl", "{run_id}.{rollout_id}.spans.jsonl"} {
		t.Run(template, func(t *testing.T) {
			root := t.TempDir()
			capture := filepath.Join(root, "capture")
			outside := filepath.Join(root, "outside")
			require.NoError(t, os.MkdirAll(outside, 0o755))
			victim := filepath.Join(outside, "victim")
			require.NoError(t, os.WriteFile(victim, []byte("untouched\n"), 0o644))
			e, tel := newTestExporter(t, func(c *Config) {
				c.CaptureDir = capture
				c.PathTemplate = template
			})
			startExporter(t, e)

			prefix := ""
			if strings.Contains(template, "{run_id}") {
				prefix = "run1."
			}
			// Plant traps under valid rollouts' names.
			require.NoError(t, os.Symlink(victim, filepath.Join(capture, prefix+"symlinked.spans.jsonl")))
			require.NoError(t, os.Symlink(outside, filepath.Join(capture, prefix+"dirlink.spans.jsonl")))
			require.NoError(t, os.Mkdir(filepath.Join(capture, prefix+"dir.spans.jsonl"), 0o755))
			require.NoError(t, syscall.Mkfifo(filepath.Join(capture, prefix+"fifo.spans.jsonl"), 0o644))
			require.NoError(t, os.Link(victim, filepath.Join(capture, prefix+"hardlink.spans.jsonl")))
			before := walkFiles(t, root)

			ids := append([]string{"ok-1", "symlinked", "dirlink", "dir", "fifo", "hardlink"}, hostileIDs...)
			require.NoError(t, e.pushTraces(context.Background(), spansWithRollouts("run1", ids)))
			// Hostile run ids: with {run_id} every span goes to the combined file only.
			for _, run := range []string{"../run", "a/b", "..", strings.Repeat("u", 201)} {
				require.NoError(t, e.pushTraces(context.Background(), spansWithRollouts(run, []string{"ok-2"})))
			}
			require.NoError(t, e.shutdown(context.Background()))

			after := walkFiles(t, root)
			var created []string
			for _, p := range after {
				if !slices.Contains(before, p) {
					created = append(created, p)
				}
			}
			sort.Strings(created)
			want := []string{"capture/" + prefix + "ok-1.spans.jsonl", "capture/" + prefix + "ok-2.spans.jsonl", "capture/rollouts.jsonl", "capture/spans.jsonl"}
			if prefix != "" {
				want = []string{"capture/" + prefix + "ok-1.spans.jsonl", "capture/rollouts.jsonl", "capture/spans.jsonl"}
			}
			sort.Strings(want)
			assert.Equal(t, want, created)
			data, err := os.ReadFile(victim)
			require.NoError(t, err)
			assert.Equal(t, "untouched\n", string(data), "the file behind the symlink and the hard link is untouched")
			ents, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Len(t, ents, 1)

			// Every span is in the combined file.
			lines := readLines(t, filepath.Join(capture, "spans.jsonl"))
			assert.Len(t, lines, 2*len(ids)+2*4)

			rejected := metricByAttr(t, tel, metricRejected, "reason")
			nonEmptyHostile := int64(len(hostileIDs) - 1) // "" is no rollout at all
			assert.Equal(t, 2*nonEmptyHostile, rejected[rejectRolloutID], "two spans per hostile id")
			assert.Equal(t, int64(2*5), rejected[rejectUnsafeFile], "two spans per planted file")
			if prefix != "" {
				assert.Equal(t, int64(2*4), rejected[rejectRunID])
			} else {
				assert.Zero(t, rejected[rejectRunID])
			}
		})
	}
}

func TestValidIDProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "id")
		if !gymconv.SafeFileID(s) {
			return
		}
		// A valid id is a plain, visible file name component.
		if s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00 ") || filepath.Base(s) != s || len(s) > 200 || s[0] == '.' || s[0] == '-' {
			t.Fatalf("SafeFileID accepted %q", s)
		}
	})
	assert.True(t, gymconv.SafeFileID("12-3-a1"))
	assert.True(t, gymconv.SafeFileID(strings.Repeat("a", 200)))
	assert.False(t, gymconv.SafeFileID(strings.Repeat("a", 201)))
}

func attributeKey(k string) attribute.Key { return attribute.Key(k) }
