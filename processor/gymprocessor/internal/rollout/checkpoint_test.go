// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/state"
)

// noNotes is the note codec of a core whose owner notes nothing.
type noNotes struct{}

func (noNotes) EncodeNote(w *state.Writer, v any) {
	if v != nil {
		panic("a note")
	}
}
func (noNotes) DecodeNote(*state.Reader) any { return nil }

// event is a batch of spans arriving, or a tick, at a time.
type event struct {
	at    int64
	spans []span
	run   string
	tick  bool
	// restart: the collector started again on what it recorded
	// (Core.Restarted).
	restart bool
}

// drawEvents draws a forest of spans (parents, evidence, job spans,
// local requests, several runs) arriving in random batches, with ticks
// between them, some past settle, wait and rollout_wait, and restarts.
func drawEvents(t *rapid.T) []event {
	n := rapid.IntRange(1, 40).Draw(t, "spans")
	spans := make([]span, n)
	for i := range spans {
		s := span{id: fmt.Sprint("s", i), trace: fmt.Sprint("t", rapid.IntRange(0, 2).Draw(t, "trace")), start: int64(i), end: int64(100 - i)}
		switch p := rapid.IntRange(-2, n-1).Draw(t, "parent"); {
		case p == -1:
			s.parent = "absent"
		case p >= 0 && p != i:
			s.parent = fmt.Sprint("s", p)
		}
		switch rapid.IntRange(0, 5).Draw(t, "says") {
		case 0, 1:
			s.evidence = fmt.Sprint(rapid.IntRange(0, 2).Draw(t, "rollout"), "-0")
		case 2:
			s.job = true
		case 3:
			s.localRequest = s.parent != ""
		}
		spans[i] = s
	}
	var evs []event
	now := int64(0)
	gaps := []int64{0, sec / 1000, 5 * sec / 2, 5 * sec, 30 * sec, 7200 * sec}
	for len(spans) > 0 {
		k := rapid.IntRange(1, len(spans)).Draw(t, "batch")
		now += rapid.SampledFrom(gaps).Draw(t, "gap")
		if rapid.Bool().Draw(t, "tick") {
			evs = append(evs, event{at: now, tick: true})
		}
		if rapid.IntRange(0, 5).Draw(t, "restart") == 0 {
			evs = append(evs, event{at: now, restart: true})
		}
		evs = append(evs, event{at: now, spans: spans[:k], run: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "run")})
		spans = spans[k:]
	}
	for range rapid.IntRange(1, 3).Draw(t, "after") {
		now += rapid.SampledFrom(gaps).Draw(t, "gapAfter")
		evs = append(evs, event{at: now, tick: true})
	}
	return evs
}

func (o *recorder) play(ev event) {
	switch {
	case ev.restart:
		o.restart(ev.at)
	case ev.tick:
		o.tick(ev.at, false)
	default:
		o.arrive(ev.at, ev.run, ev.spans...)
	}
}

// told is what the owner was told of a departure, without the node.
func told(o *recorder, ds []Departure) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		name := o.names[d.Key]
		d.Node, d.Run = nil, nil
		out[i] = fmt.Sprintf("%s %+v", name, d)
	}
	return out
}

// A core restored from a checkpoint decides exactly as the core it was
// taken from, event by event, and at the shutdown; every span leaves once.
func TestPropertyCheckpointRestoreIsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		cfg.Split = rapid.Bool().Draw(rt, "split")
		if rapid.Bool().Draw(rt, "bounded") {
			cfg.MaxPendingSpans = rapid.IntRange(1, 8).Draw(rt, "maxSpans")
		}
		evs := drawEvents(rt)
		cut := rapid.IntRange(0, len(evs)).Draw(rt, "cut")

		whole := newRecorder(cfg)
		for _, ev := range evs {
			whole.play(ev)
		}
		whole.tick(evs[len(evs)-1].at, true)

		before := newRecorder(cfg)
		for _, ev := range evs[:cut] {
			before.play(ev)
		}
		w := state.NewWriter(0)
		before.c.Snapshot().Encode(w, noNotes{})
		after := newRecorder(cfg)
		after.held, after.names = maps.Clone(before.held), maps.Clone(before.names)
		maps.Copy(after.leftBy, before.leftBy)
		r := state.NewReader(w.Bytes())
		_, err := after.c.Restore(r, noNotes{})
		require.NoError(rt, err)
		require.Zero(rt, r.Left())
		for _, ev := range evs[cut:] {
			after.play(ev)
		}
		after.tick(evs[len(evs)-1].at, true)
		require.Equal(rt, told(whole, whole.left[len(before.left):]), told(after, after.left))
		require.Zero(rt, after.c.Pending())
	})
}

// A checkpoint cut short is refused, never half-applied, never a panic.
func TestCheckpointCutShortIsRefused(t *testing.T) {
	o := newRecorder(testConfig())
	o.arrive(0, "run", shutdownSpans()...)
	w := state.NewWriter(0)
	o.c.Snapshot().Encode(w, noNotes{})
	b := w.Bytes()
	for n := range len(b) {
		fresh := newRecorder(testConfig())
		_, err := fresh.c.Restore(state.NewReader(b[:n]), noNotes{})
		require.Error(t, err, "cut at %d of %d bytes", n, len(b))
	}
}
