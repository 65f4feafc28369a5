// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sp is a span of a synthetic tree: times in milliseconds from 0.
func sp(id, parent uint64, start, end int64, role Role) Span {
	return Span{ID: id, Parent: parent, Start: start * 1e6, End: end * 1e6, Role: role}
}

// ms is a split in milliseconds, as the tables write it.
type ms struct{ model, tools, verify, agent, queue, other int64 }

func (m ms) split() Split {
	return Split{m.model * 1e6, m.tools * 1e6, m.verify * 1e6, m.agent * 1e6, m.queue * 1e6, m.other * 1e6}
}

// TestOf: synthetic trees, each the situation it is named for, with the
// split worked out by hand from design §4.8's rule.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		root  Span
		spans []Span
		want  ms
	}{
		{
			name: "one_span_rollout_orchestrator_call",
			root: sp(1, 0, 0, 100, Plain),
			want: ms{other: 100},
		},
		{
			name: "one_span_rollout_gym_rollout",
			root: sp(1, 0, 0, 100, Rollout),
			want: ms{agent: 100},
		},
		{
			// The orchestrator's call [0,100] → the agent's /run [10,95]:
			// model [20,50], agent [50,60], tool [60,70], model [70,85],
			// verify [85,92] (its judge's model call [86,90] is verify
			// time); queue before /run, other after it.
			name: "agent_run_with_calls",
			root: sp(1, 0, 0, 100, Plain),
			spans: []Span{
				sp(2, 1, 10, 95, AgentRun),
				sp(3, 2, 20, 50, ModelCall),
				sp(4, 3, 22, 49, Plain), // the model server's span
				sp(5, 2, 60, 70, ToolCall),
				sp(6, 2, 70, 85, ModelCall),
				sp(7, 2, 85, 92, VerifyCall),
				sp(8, 7, 86, 90, ModelCall),
			},
			want: ms{model: 45, tools: 10, verify: 7, agent: 23, queue: 10, other: 5},
		},
		{
			// Two model calls at once [10,50] and [30,80] under the agent's
			// /run [0,100]: the one that finished last is on the path; the
			// other ended after it started and is passed over.
			name: "overlapping_children",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(2, 1, 10, 50, ModelCall),
				sp(3, 1, 30, 80, ModelCall),
				sp(4, 1, 0, 20, ToolCall), // ended before [30,80] started: on the path
			},
			want: ms{model: 50, tools: 20, agent: 30},
		},
		{
			// A model call [60,130] outlives the agent's /run [0,100]: it is
			// clipped to [60,100], and so is its own child.
			name: "child_outlives_parent",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(2, 1, 60, 130, ModelCall),
				sp(3, 2, 90, 125, Plain),
			},
			want: ms{model: 40, agent: 60},
		},
		{
			// The agent's CLIENT span of a model call never arrived: the
			// model server's SERVER span below it is not reached, and the
			// call's time is the agent's. The tool call is there.
			name: "missing_spans",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(3, 2, 10, 40, ModelCall), // parent 2 missing
				sp(4, 1, 50, 60, ToolCall),
			},
			want: ms{tools: 10, agent: 90},
		},
		{
			// FastAPI's "http receive" that waits for the disconnect lasts
			// the whole request and outlives it: an event, left out, so the
			// calls below the SERVER span stay on the path.
			name: "asgi_receive_outlives_server_span",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(2, 1, 1, 101, Event),
				sp(3, 1, 0, 1, Event),
				sp(4, 1, 20, 80, ModelCall),
			},
			want: ms{model: 60, agent: 40},
		},
		{
			// Generic instrumentation: a wrapper's /run [5,98] calls the
			// agent's /run [20,95]; the innermost /run is the agent's.
			name: "generic_nested_runs",
			root: sp(1, 0, 0, 100, Plain),
			spans: []Span{
				sp(2, 1, 5, 98, Run),
				sp(3, 2, 15, 97, Plain), // the wrapper's CLIENT call
				sp(4, 3, 20, 95, Run),
				sp(5, 4, 30, 60, ModelCall),
				sp(6, 4, 60, 70, ToolCall),
			},
			want: ms{model: 30, tools: 10, agent: 35, queue: 20, other: 5},
		},
		{
			// Gym's own spans with http_client off: the root is the
			// agent's gym.rollout, no /run above it.
			name: "gym_rollout_root",
			root: sp(1, 0, 0, 100, Rollout),
			spans: []Span{
				sp(2, 1, 10, 40, ModelCall),
				sp(3, 1, 40, 45, Plain), // an agent's INTERNAL span
				sp(4, 1, 50, 99, VerifyCall),
			},
			want: ms{model: 30, verify: 49, agent: 21},
		},
		{
			// No agent's /run below the root: no queue, the rest is other.
			name: "no_agent_run",
			root: sp(1, 0, 0, 100, Plain),
			spans: []Span{
				sp(2, 1, 10, 30, ModelCall),
			},
			want: ms{model: 20, other: 80},
		},
		{
			// Parent ids that go round (a hostile sender): each span is
			// walked once.
			name: "parent_cycle",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(2, 3, 10, 90, ModelCall),
				sp(3, 2, 10, 90, ToolCall),
				sp(4, 1, 10, 90, Plain),
				sp(2, 4, 10, 90, ModelCall), // span 2 again, under 4
				sp(5, 5, 0, 100, ToolCall),  // its own parent
			},
			want: ms{model: 80, agent: 20},
		},
		{
			// The root is among the spans, and a span delivered twice.
			name: "root_and_duplicates_among_spans",
			root: sp(1, 0, 0, 100, AgentRun),
			spans: []Span{
				sp(1, 0, 0, 100, AgentRun),
				sp(2, 1, 10, 50, ModelCall),
				sp(2, 1, 10, 50, ModelCall),
			},
			want: ms{model: 40, agent: 60},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Of(tc.root, tc.spans)
			require.True(t, ok)
			assert.Equal(t, tc.want.split(), got)
			assert.Equal(t, tc.root.End-tc.root.Start, got.Total())
		})
	}
}

func TestOfRootEndsBeforeItStarts(t *testing.T) {
	_, ok := Of(sp(1, 0, 100, 10, Plain), nil)
	assert.False(t, ok)
}

// TestRedispatchedAttempt: Gym re-dispatches a failed rollout 3-1 as
// 3-1-a1 (design §4.3); each attempt is its own rollout with its own root,
// and their spans, interleaved as they arrive, never mix.
func TestRedispatchedAttempt(t *testing.T) {
	tr := NewTracker(1 << 10)
	first, again := Key{"run", "3-1"}, Key{"run", "3-1-a1"}
	for _, a := range []struct {
		k Key
		s Span
	}{
		{first, sp(11, 10, 10, 40, ModelCall)},
		{again, sp(21, 20, 110, 130, ModelCall)},
		{first, sp(10, 1, 5, 50, AgentRun)},
		{again, sp(22, 20, 130, 190, ToolCall)},
		{again, sp(20, 2, 105, 195, AgentRun)},
	} {
		tr.Add(a.k, a.s)
	}
	got, o := tr.Finish(first, sp(1, 0, 0, 60, Plain))
	require.Equal(t, Computed, o)
	assert.Equal(t, ms{model: 30, agent: 15, queue: 5, other: 10}.split(), got)
	got, o = tr.Finish(again, sp(2, 0, 100, 200, Plain))
	require.Equal(t, Computed, o)
	assert.Equal(t, ms{model: 20, tools: 60, agent: 10, queue: 5, other: 5}.split(), got)
}
