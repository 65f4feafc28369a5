// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// newObservedExporter is newTestExporter with the component logger recorded.
func newObservedExporter(t *testing.T, mutate func(*Config)) (*spansExporter, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.WarnLevel)
	set := exportertest.NewNopSettings(componentType)
	set.Logger = zap.New(core)
	e, err := newSpansExporter(set, testConfig(t, mutate))
	require.NoError(t, err)
	startExporter(t, e)
	return e, logs
}

// oneRollout is a parentless root and its child in rollout id of run, the
// rollout named by rolloutAttr, the run by the resource attribute runAttr.
// res adds resource attributes. The trace id is made of the arguments, so
// different rollouts are different spans (the exporter drops a span written
// twice).
func oneRollout(rolloutAttr, id, runAttr, run string, res map[string]string) ptrace.Traces {
	sum := sha256.Sum256([]byte(rolloutAttr + "\x00" + id + "\x00" + runAttr + "\x00" + run))
	tid := pcommon.TraceID(sum[:16])
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(runAttr, run)
	for k, v := range res {
		rs.Resource().Attributes().PutStr(k, v)
	}
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	root := spans.AppendEmpty()
	root.SetName("gym.rollout")
	root.SetTraceID(tid)
	root.SetSpanID([8]byte{1})
	root.Attributes().PutStr(rolloutAttr, id)
	child := spans.AppendEmpty()
	child.SetName("HTTP POST")
	child.SetTraceID(tid)
	child.SetSpanID([8]byte{2})
	child.SetParentSpanID([8]byte{1})
	child.Attributes().PutStr(rolloutAttr, id)
	return td
}

// TestAttributeKeysAreConfigurable (issue #20): rollout_attribute,
// run_attribute and service_attributes, loaded through confmap as a user
// writes them, decide the rollout's file, its run and the service in
// rollouts.jsonl, as the gym processor's keys of the same names do.
func TestAttributeKeysAreConfigurable(t *testing.T) {
	dir := t.TempDir()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"capture_dir":        dir,
		"rollout_attribute":  "app.rollout",
		"run_attribute":      "app.job",
		"service_attributes": []any{"app.service", "service.name"},
		"path_template":      "{run_id}.{rollout_id}.spans.jsonl",
		"service_map":        map[string]any{"enabled": false},
	}).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	td := oneRollout("app.rollout", "7-1", "app.job", "j1", map[string]string{"service.name": "gym-bench", "app.service": "agent"})
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))

	assert.Len(t, readLines(t, filepath.Join(dir, "j1.7-1.spans.jsonl")), 2)
	roots := readLines(t, filepath.Join(dir, "rollouts.jsonl"))
	require.Len(t, roots, 1)
	var root struct {
		RolloutID   string `json:"rollout_id"`
		RunID       string `json:"run_id"`
		ServiceName string `json:"service_name"`
	}
	require.NoError(t, json.Unmarshal([]byte(roots[0]), &root))
	assert.Equal(t, "7-1", root.RolloutID)
	assert.Equal(t, "j1", root.RunID)
	assert.Equal(t, "agent", root.ServiceName)
}

// TestMissingRolloutAttributeIsLogged (issue #20): spans the gym processor
// put in a rollout (its split mark, or its root mark) that lack the
// exporter's rollout_attribute, because the processor was given another
// one, get a warning naming the key, at most once a minute; so do spans
// with Gym's default key when the exporter was given another. Spans in no
// rollout get none.
func TestMissingRolloutAttributeIsLogged(t *testing.T) {
	warnings := func(logs *observer.ObservedLogs) int {
		return logs.FilterMessageSnippet("rollout_attribute").Len()
	}
	// gym processor with rollout_attribute: app.rollout, exporter default.
	e, logs := newObservedExporter(t, nil)
	job := oneRollout("other", "x", gymconv.RunAttribute, "r1", nil) // no rollout key
	require.NoError(t, e.pushTraces(context.Background(), job))
	assert.Zero(t, warnings(logs), "spans in no rollout")

	split := oneRollout("app.rollout", "7-1", gymconv.RunAttribute, "r1", nil)
	split.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).Attributes().PutStr(gymconv.OriginalTraceAttribute, "07000000000000000000000000000000")
	require.NoError(t, e.pushTraces(context.Background(), split))
	require.Equal(t, 1, warnings(logs))
	entry := logs.FilterMessageSnippet("rollout_attribute").All()[0]
	assert.Equal(t, gymconv.RolloutAttribute, entry.ContextMap()["rollout_attribute"])

	marked := oneRollout("app.rollout", "7-2", gymconv.RunAttribute, "r1", nil)
	marked.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutBool(gymconv.RolloutRootAttribute, true)
	require.NoError(t, e.pushTraces(context.Background(), marked))
	assert.Equal(t, 1, warnings(logs), "rate-limited")

	// Exporter with rollout_attribute: app.rollout, gym processor default.
	e, logs = newObservedExporter(t, func(c *Config) { c.RolloutAttribute = "app.rollout" })
	require.NoError(t, e.pushTraces(context.Background(), oneRollout(gymconv.RolloutAttribute, "7-1", gymconv.RunAttribute, "r1", nil)))
	assert.Equal(t, 1, warnings(logs))
	require.NoError(t, e.pushTraces(context.Background(), oneRollout("app.rollout", "7-1", gymconv.RunAttribute, "r1", nil)))
	assert.Equal(t, 1, warnings(logs), "spans with the exporter's key")
}
