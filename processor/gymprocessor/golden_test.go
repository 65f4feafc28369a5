// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected.json from the processor's output (inspect the diff by eye)")

// goldenDir is the repository's testdata directory (design §2).
const goldenDir = "../../testdata"

// goldenConfigs adjusts the default config for the cases that need it.
var goldenConfigs = map[string]func(*Config){
	"default_preset_promote_to_resource": func(c *Config) { c.PromoteToResource = true },
	"default_preset_split_disabled":      func(c *Config) { c.Split.Enabled = false },
}

// goldenInputs maps a case to the input it reads when it has none of its own.
var goldenInputs = map[string]string{
	"default_preset_promote_to_resource": "default_preset_3_rollouts",
	"default_preset_split_disabled":      "default_preset_3_rollouts",
}

func goldenCases(t *testing.T) []string {
	entries, err := os.ReadDir(goldenDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			_, hasInput := goldenInputs[e.Name()]
			if _, err := os.Stat(filepath.Join(goldenDir, e.Name(), "input.json")); err == nil {
				hasInput = true
			}
			// A dir with no input of its own is not a case of this test
			// (testdata/real_gym_* are e2e's recorded runs).
			if _, err := os.Stat(filepath.Join(goldenDir, e.Name(), "expected.json")); hasInput && (err == nil || *update) {
				names = append(names, e.Name())
			}
		}
	}
	for name := range goldenConfigs {
		if _, err := os.Stat(filepath.Join(goldenDir, name)); err != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	require.NotEmpty(t, names)
	return names
}

func goldenInput(t *testing.T, name string) ptrace.Traces {
	in := name
	if alt, ok := goldenInputs[name]; ok {
		in = alt
	}
	return readTraces(t, filepath.Join(goldenDir, in, "input.json"))
}

func goldenConfig(name string) *Config {
	cfg := coreConfig()
	if f, ok := goldenConfigs[name]; ok {
		f(cfg)
	}
	return cfg
}

// runPlan feeds batches within settle of each other, lets every deadline
// pass on the timer, then shuts down.
func runPlan(t *testing.T, cfg *Config, batches []ptrace.Traces, tick bool) []normSpan {
	h := newHarness(t, cfg)
	for _, b := range batches {
		h.consume(b)
		h.clock.Advance(time.Millisecond)
	}
	if tick {
		h.tickAt(3 * cfg.RolloutWait)
		require.Zero(t, h.pending(), "nothing is held once every deadline passed")
	}
	h.shutdown()
	return h.out()
}

func TestGolden(t *testing.T) {
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			cfg := goldenConfig(name)
			input := goldenInput(t, name)
			inCount := input.SpanCount()
			expPath := filepath.Join(goldenDir, name, "expected.json")

			whole := ptrace.NewTraces()
			input.CopyTo(whole)
			got := runPlan(t, cfg, []ptrace.Traces{whole}, true)
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(expPath), 0o750))
				writeJSON(t, expPath, got)
			}
			var want []normSpan
			b, err := os.ReadFile(expPath)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &want))
			require.Len(t, want, inCount, "every input span leaves exactly once")
			assertSameSpans(t, want, got, "whole batch")

			for plan, batches := range arrivalPlans(input, 6) {
				assertSameSpans(t, want, runPlan(t, cfg, batches, true), plan)
			}
			// Shutdown alone takes every decision the timer would have taken.
			for plan, batches := range arrivalPlans(input, 2) {
				assertSameSpans(t, want, runPlan(t, cfg, batches, false), "shutdown/"+plan)
			}

			// A second gym processor changes nothing.
			first := newHarness(t, cfg)
			again := ptrace.NewTraces()
			input.CopyTo(again)
			first.consume(again)
			first.shutdown()
			var second []ptrace.Traces
			for _, td := range first.sink.AllTraces() {
				c := ptrace.NewTraces()
				td.CopyTo(c)
				second = append(second, c)
			}
			assertSameSpans(t, want, runPlan(t, cfg, second, true), "second processor")
		})
	}
}

func assertSameSpans(t *testing.T, want, got []normSpan, plan string) {
	t.Helper()
	wb, _ := json.MarshalIndent(want, "", "  ")
	gb, _ := json.MarshalIndent(got, "", "  ")
	assert.Equal(t, string(wb), string(gb), "plan %s", plan)
}

func prettyJSON(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, b, "", "  "))
	buf.WriteByte('\n')
	return buf.Bytes()
}
