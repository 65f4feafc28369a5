// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/gymtest"
)

// evalSubmitTraces is a default-preset rollout, every span in its rollout as
// behind the gym processor, as it leaves the collector
// `gym eval submit` renders (config/eval-submit.yaml): transform/identity
// copied each process's service.name to service.name.override, and the
// resource processor upserted service.name to one routing name for all.
func evalSubmitTraces() (ptrace.Traces, map[string]string) {
	procs := gymtest.Processes()
	own := map[string]string{}
	for k, p := range procs {
		own[k] = p.Service
		p.Attributes = map[string]any{gymconv.ServiceOverrideAttribute: p.Service}
		p.Service = "gym-bench"
		procs[k] = p
	}
	spans := append(processedRollout("2-0", gymtest.RolloutOptions{PerRollout: true, DispatchParent: "job", Trace: "job"}, "", false), gymtest.Job("job"))
	return gymtest.Build(procs, gymtest.ProcessOrder(), spans), own
}

// TestFilesShowEachProcessService (issue #20, defect 5): behind `gym eval
// submit` the lines of both formats carry each process's own name as
// resource service.name (the first of service_attributes present), with the
// routing name beside it as service.name.routing, so the seed's recipe
// `jq -r '[.trace_id, .resource.attributes."service.name", .kind, .name]'`
// shows one service per process again. The Traces handed to the exporter
// are not changed: the backends behind the same pipeline get the resource
// as it came.
func TestFilesShowEachProcessService(t *testing.T) {
	td, own := evalSubmitTraces()
	before, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	wantServices := map[string]bool{}
	for _, s := range own {
		wantServices[s] = true
	}
	delete(wantServices, own["norun"]) // sends no span here

	t.Run("console", func(t *testing.T) {
		e, _ := newTestExporter(t, nil)
		startExporter(t, e)
		require.NoError(t, e.pushTraces(context.Background(), td))
		flushFiles(t, e)
		for _, f := range []string{"spans.jsonl", "2-0.spans.jsonl"} {
			services := map[string]bool{}
			for _, l := range readLines(t, filepath.Join(e.cfg.CaptureDir, f)) {
				var line struct {
					Resource struct {
						Attributes map[string]any `json:"attributes"`
					} `json:"resource"`
				}
				require.NoError(t, json.Unmarshal([]byte(l), &line))
				a := line.Resource.Attributes
				services[fmt.Sprint(a[gymconv.ServiceNameAttribute])] = true
				assert.Equal(t, "gym-bench", a[gymconv.RoutingServiceAttribute], "the routing name is kept")
				assert.Equal(t, a[gymconv.ServiceOverrideAttribute], a[gymconv.ServiceNameAttribute])
			}
			assert.Equal(t, wantServices, services, "%s: the recipe's services", f)
		}
	})
	t.Run("otlp_json", func(t *testing.T) {
		e, _ := newTestExporter(t, func(c *Config) { c.Format = formatOTLPJSON })
		startExporter(t, e)
		require.NoError(t, e.pushTraces(context.Background(), td))
		services := map[string]bool{}
		for _, l := range readLines(t, filepath.Join(e.cfg.CaptureDir, "spans.jsonl")) {
			got, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(l))
			require.NoError(t, err)
			for i := 0; i < got.ResourceSpans().Len(); i++ {
				a := got.ResourceSpans().At(i).Resource().Attributes()
				svc := strAttr(a, gymconv.ServiceNameAttribute)
				services[svc] = true
				assert.Equal(t, "gym-bench", strAttr(a, gymconv.RoutingServiceAttribute))
				assert.Equal(t, strAttr(a, gymconv.ServiceOverrideAttribute), svc)
			}
		}
		assert.Equal(t, wantServices, services)
	})
	after, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the exporter changed the Traces it was given")
}
