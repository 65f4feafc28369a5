// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// goldenCheckpoint holds a checkpoint of goldenSchedule's first
// goldenCut events, written by an earlier build (-update rewrites it).
var goldenCheckpoint = filepath.Join("testdata", "checkpoint", "state.bin")

// format1Checkpoint is the same checkpoint as the builds before the rollout
// core wrote it (checkpoint format 1, one engine's state in one order).
var format1Checkpoint = filepath.Join("testdata", "checkpoint", "state-format1.bin")

const goldenCut = 7

// goldenSchedule fills an engine with every kind of state a checkpoint
// holds (held spans, index entries, waiters, runs and processes, the
// split's tables, the service-map repair's tables), then lets it drain.
func goldenSchedule(t *testing.T) []event {
	base := time.Date(2026, 8, 21, 12, 0, 0, 0, time.UTC).UnixNano()
	cfg := testConfig()
	var evs []event
	at := base
	for i, in := range []string{
		"../../testdata/default_preset_3_rollouts/input.json",
		"../../testdata/rollout_split_across_traces/input.json",
		"../../testdata/retry_links_previous_attempt/input.json",
		"testdata/sm_peer_service_sources/input.json",
		"../../testdata/parent_never_arrives/input.json",
		"testdata/sm_gym_rollout_never_comes/input.json",
	} {
		if i == 3 {
			at += int64(cfg.Settle)
			evs = append(evs, event{at: at, tick: true})
		}
		evs = append(evs, event{at: at, batch: readTraces(t, in)})
		at += int64(time.Millisecond)
	}
	for _, gap := range []time.Duration{0, cfg.Settle, cfg.Wait, cfg.RolloutWait, cfg.RolloutWait} {
		at += int64(gap)
		evs = append(evs, event{at: at, tick: true})
	}
	return evs
}

// A checkpoint written by an earlier build restores into an engine that
// emits exactly as the engine it was taken from, and so does a checkpoint
// of the restored engine. Node numbering follows map order, so a snapshot
// is not byte-canonical: the check is by restore and behaviour, not by
// comparing a fresh snapshot's bytes with the file.
func TestCheckpointGoldenRestores(t *testing.T) {
	cfg := testConfig()
	evs := goldenSchedule(t)

	whole, err := newEngine(cfg)
	require.NoError(t, err)
	var want []string
	for i, ev := range evs {
		want = append(want, play(t, whole, ev))
		if i == goldenCut-1 && *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(goldenCheckpoint), 0o755))
			require.NoError(t, os.WriteFile(goldenCheckpoint, whole.snapshot(), 0o600))
		}
	}
	final := drain(t, whole, evs)

	golden, err := os.ReadFile(goldenCheckpoint)
	require.NoError(t, err)
	check := func(name string, snap []byte) []byte {
		e, err := newEngine(cfg)
		require.NoError(t, err)
		require.NoError(t, e.restore(snap), name)
		again := e.snapshot()
		for i, ev := range evs[goldenCut:] {
			require.Equal(t, want[goldenCut+i], play(t, e, ev), "%s: round %d", name, goldenCut+i)
		}
		require.Equal(t, final, drain(t, e, evs), "%s: shutdown", name)
		return again
	}
	again := check("golden", golden)
	check("golden restored and taken again", again)
}

// drain flushes e as at shutdown, after evs, and returns what it emits as
// OTLP/JSON.
func drain(t *testing.T, e *engine, evs []event) string {
	r := e.flush(evs[len(evs)-1].at, true)
	r.applyEdits(e.cfg.RolloutAttribute)
	r.assemble()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(r.out)
	require.NoError(t, err)
	r.recycle()
	return string(b)
}

// TestDamagedCheckpointIsAnError: a checkpoint that indexes a list it left
// empty, and every truncation and byte flip of the golden checkpoint, is
// refused with an error or restored; restore never panics (crash.go then
// sets the journal aside and starts empty).
// A checkpoint of format 1 (builds before the rollout core) is refused with
// what it is: no build reads another build's journal (journal.go's
// fingerprint sets it aside first), so the format changed without a reader
// of the old one.
func TestFormat1CheckpointIsRefused(t *testing.T) {
	old, err := os.ReadFile(format1Checkpoint)
	require.NoError(t, err)
	eng, err := newEngine(testConfig())
	require.NoError(t, err)
	require.EqualError(t, eng.restore(old), "checkpoint format 1, this build reads 2")
}

func TestDamagedCheckpointIsAnError(t *testing.T) {
	restore := func(b []byte) error {
		eng, err := newEngine(testConfig())
		require.NoError(t, err)
		return eng.restore(b)
	}
	// No runs, no nodes, no slots, one held entry pointing at node 0.
	require.Error(t, restore([]byte{2, 2, 0, 0, 0, 0, 0, 0, 1, 0, 0}))
	golden, err := os.ReadFile(goldenCheckpoint)
	require.NoError(t, err)
	require.NoError(t, restore(golden))
	for n := 0; n < len(golden); n += 1 + n/64 {
		require.Error(t, restore(golden[:n]), "truncated to %d bytes", n)
	}
	for i := 0; i < len(golden); i += 1 + i/256 {
		b := append([]byte(nil), golden...)
		b[i] ^= 0xff
		_ = restore(b) // refused or restored, never a panic
	}
}
