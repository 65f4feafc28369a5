// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
)

// processedRollout is rollout r drawn with o as the gym processor passes it
// on: every span of the rollout carries the rollout attribute, and the span
// of role root (if any) carries the root mark, its parent cut when split is
// on. The spans of the roles in missing never arrived; without gym.rollout
// ("rollout") the spans above it (the orchestrator's dispatch, the agent's
// POST /run and its ASGI spans) are in no rollout.
func processedRollout(r string, o gymtest.RolloutOptions, root string, split bool, missing ...string) []gymtest.Span {
	o.Observability = true
	upward := []string{"dispatch", "run", "recv", "send"}
	var out []gymtest.Span
	for _, s := range gymtest.Rollout(r, o) {
		role := strings.TrimPrefix(s.ID, r+"/")
		if slices.Contains(missing, role) {
			continue
		}
		if !slices.Contains(missing, "rollout") || !slices.Contains(upward, role) {
			s.Attributes[gymconv.RolloutAttribute] = r
		}
		if role == root {
			s.Attributes[gymconv.RolloutRootAttribute] = true
			if split {
				s.Parent = ""
			}
		}
		out = append(out, s)
	}
	return out
}

// rootsWritten exports td through the factory, started with host, with rollout_roots (loaded
// through confmap as a user writes it; "" leaves the default) and returns
// the root_span_id of every rollouts.jsonl line, sorted, and the file's
// lines as decoded.
func rootsWritten(t *testing.T, host component.Host, rolloutRoots string, td ptrace.Traces) []string {
	t.Helper()
	dir := t.TempDir()
	cfg := createDefaultConfig().(*Config)
	raw := map[string]any{"capture_dir": dir, "service_map": map[string]any{"enabled": false}}
	if rolloutRoots != "" {
		raw["rollout_roots"] = rolloutRoots
	}
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), host))
	require.NoError(t, exp.ConsumeTraces(context.Background(), td))
	require.NoError(t, exp.Shutdown(context.Background()))
	path := filepath.Join(dir, "rollouts.jsonl")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil
	}
	var ids []string
	for _, l := range readLines(t, path) {
		var line struct {
			RolloutID  string `json:"rollout_id"`
			RootSpanID string `json:"root_span_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		ids = append(ids, line.RolloutID+" "+line.RootSpanID)
	}
	sort.Strings(ids)
	return ids
}

// collectorHost is the host a collector starts the exporter with, as far as
// rollout_roots: auto reads it: it hands out the collector's factory of the
// gym processor (hostcapabilities.ComponentFactory).
type collectorHost struct {
	component.Host
	gym processor.Factory // its factory of processor type gym; nil: none
}

func (h collectorHost) GetFactory(kind component.Kind, typ component.Type) component.Factory {
	if h.gym == nil || kind != component.KindProcessor || typ.String() != gymconv.ProcessorType {
		return nil
	}
	return h.gym
}

// hostWithGymProcessor returns the host of a collector whose gym processor
// factory created a processor (present) or none.
func hostWithGymProcessor(t *testing.T, present bool) component.Host {
	t.Helper()
	f := gymprocessor.NewFactory()
	if present {
		p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), consumertest.NewNop())
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	}
	return collectorHost{Host: componenttest.NewNopHost(), gym: f}
}

func roots(r string, roles ...string) []string {
	var out []string
	for _, role := range roles {
		out = append(out, r+" "+gymtest.SpanID(r+"/"+role).String())
	}
	sort.Strings(out)
	return out
}

// TestRolloutsFileLinePerMarkedRoot (issue #20, defect 1): with the gym
// processor in the collector, rollouts.jsonl has one line per span the
// processor marked as its rollout's root, whatever the parents: with
// split.enabled false (the marked root keeps its parent, and no span of the
// rollout is parentless), with synthesize_client_spans false under Gym's
// http_client off (the model and resources SERVER spans are parentless),
// and when gym.rollout never arrives (nothing is marked). rollout_roots:
// parentless, the rule without the processor, gets each of these wrong.
func TestRolloutsFileLinePerMarkedRoot(t *testing.T) {
	procs, order := gymtest.Processes(), gymtest.ProcessOrder()
	for _, tc := range []struct {
		name       string
		spans      []gymtest.Span
		marked     []string // lines with the root marks
		parentless []string // lines of the parentless rule
	}{{
		name:       "split disabled",
		spans:      append(processedRollout("3-0", gymtest.RolloutOptions{Trace: "job", DispatchParent: "job"}, "dispatch", false), gymtest.Job("job")),
		marked:     roots("3-0", "dispatch"),
		parentless: nil,
	}, {
		name:       "no synthesized CLIENT spans",
		spans:      append(processedRollout("3-1", gymtest.RolloutOptions{Trace: "job", DispatchParent: "job", NoClient: true}, "dispatch", true), gymtest.Job("job")),
		marked:     roots("3-1", "dispatch"),
		parentless: roots("3-1", "dispatch", "model-server", "verify-server"),
	}, {
		name:       "gym.rollout never arrives",
		spans:      append(processedRollout("3-2", gymtest.RolloutOptions{Trace: "job", DispatchParent: "job", NoClient: true}, "", true, "rollout"), gymtest.Job("job")),
		marked:     nil,
		parentless: roots("3-2", "model-server", "verify-server"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			td := gymtest.Build(procs, order, tc.spans)
			host := hostWithGymProcessor(t, true)
			assert.Equal(t, tc.marked, rootsWritten(t, host, "", td), "auto, with a gym processor")
			assert.Equal(t, tc.marked, rootsWritten(t, host, "marked", td))
			assert.Equal(t, tc.parentless, rootsWritten(t, host, "parentless", td))
		})
	}
}

// TestRolloutsFileWithoutGymProcessor (issue #20, defect 1): with no gym
// processor in the collector nothing marks roots, and rollout_roots: auto
// keeps the rule of a parentless span with a rollout id; marked writes no
// line for unmarked spans.
func TestRolloutsFileWithoutGymProcessor(t *testing.T) {
	host := hostWithGymProcessor(t, false)
	td := gymTraces(1, 2, 4) // each rollout's gym.rollout is parentless
	want := []string{
		"0-0 " + gymtest.SpanID("1/0/0").String(),
		"0-1 " + gymtest.SpanID("1/1/0").String(),
	}
	sort.Strings(want)
	assert.Equal(t, want, rootsWritten(t, host, "", td), "auto, without a gym processor")
	assert.Equal(t, want, rootsWritten(t, host, "parentless", td))
	assert.Nil(t, rootsWritten(t, host, "marked", td))
}

// TestRolloutRootsAutoAsksItsCollector: rollout_roots: auto follows the gym
// processor of the exporter's own collector, as the host it is started with
// hands it out, and nothing else of the process: a gym processor created
// for another collector (another factory) does not make auto mean marked,
// and a host that hands out no factory, or no gym one, means no gym
// processor.
func TestRolloutRootsAutoAsksItsCollector(t *testing.T) {
	td := append(processedRollout("3-1", gymtest.RolloutOptions{Trace: "job", DispatchParent: "job", NoClient: true}, "dispatch", true), gymtest.Job("job"))
	traces := gymtest.Build(gymtest.Processes(), gymtest.ProcessOrder(), td)
	marked, parentless := roots("3-1", "dispatch"), roots("3-1", "dispatch", "model-server", "verify-server")
	with := hostWithGymProcessor(t, true)
	without := hostWithGymProcessor(t, false) // created after a gym processor of another collector
	for _, tc := range []struct {
		name string
		host component.Host
		want []string
	}{
		{"its factory created a gym processor", with, marked},
		{"its factory created none", without, parentless},
		{"a host that hands out no factory", componenttest.NewNopHost(), parentless},
		{"a collector without a gym processor factory", collectorHost{Host: componenttest.NewNopHost()}, parentless},
		{"a factory of type gym that is not the gym processor's", collectorHost{Host: componenttest.NewNopHost(), gym: processortest.NewNopFactory()}, parentless},
		{"its factory created a gym processor, again", with, marked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rootsWritten(t, tc.host, "", traces))
		})
	}
}
