// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout

import "testing"

// The wait rules before and after a restart (design §4.6): a restart moves
// a root's cut and a job span's links to the end of the wait after it when
// that is later, and nothing else.
func TestDeadlinesAroundARestart(t *testing.T) {
	const settle, wait = 5, 30
	before := deadlines{settle: settle, wait: wait, rolloutWait: 600}
	after := before
	after.restartWait = 100 + wait // restarted at 100

	for _, tc := range []struct {
		name          string
		d             deadlines
		arrival       int64
		cut, jobLinks int64
	}{
		{"no restart", before, 90, 120, 120},
		{"arrived before the restart: until its end", after, 90, 130, 130},
		{"arrived after the restart: its own wait", after, 110, 140, 140},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.rootCut(tc.arrival); got != tc.cut {
				t.Errorf("rootCut(%d) = %d, want %d", tc.arrival, got, tc.cut)
			}
			if got := tc.d.jobLinks(tc.arrival); got != tc.jobLinks {
				t.Errorf("jobLinks(%d) = %d, want %d", tc.arrival, got, tc.jobLinks)
			}
			if got, want := tc.d.upwardDecision(tc.arrival), tc.arrival+settle; got != want {
				t.Errorf("upwardDecision(%d) = %d, want %d: settle does not change", tc.arrival, got, want)
			}
			if got, want := tc.d.previousAttemptRoot(tc.arrival), tc.arrival+wait; got != want {
				t.Errorf("previousAttemptRoot(%d) = %d, want %d", tc.arrival, got, want)
			}
		})
	}
}
