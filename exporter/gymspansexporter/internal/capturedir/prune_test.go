// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRotationDoesNotWaitForPruning: the appends that rotate return while
// the old backups' pruning is held (listing a capture dir of many rollouts
// takes a fraction of a second); WaitPruned waits for it, the newest
// MaxBackups are kept, and a closed store prunes no more.
func TestRotationDoesNotWaitForPruning(t *testing.T) {
	s, ev := openTest(t, 16, true)
	held, release := make(chan struct{}, 16), make(chan struct{})
	prune := s.pruner.prune
	s.pruner.prune = func(name string, keep int) {
		held <- struct{}{}
		<-release
		prune(name, keep)
	}
	rot := &Rotation{MaxBytes: 10, MaxBackups: 2}
	const line = "0123456789\n"
	appended := make(chan error, 1)
	go func() {
		for i := 0; i < 6; i++ {
			if err := s.Append("spans.jsonl", [][]byte{[]byte(line)}, len(line), AppendOpts{Kind: "combined", Rotate: rot}); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	select {
	case err := <-appended:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a failure bound, not a wait: the appends need no pruning to return
		require.FailNow(t, "the appends that rotated waited for the pruning")
	}
	<-held
	assert.Len(t, backupsOf(t, ev.dir, "spans.jsonl"), 5, "five rotations, nothing pruned yet")

	close(release)
	s.WaitPruned()
	assert.Len(t, backupsOf(t, ev.dir, "spans.jsonl"), 2, "the newest MaxBackups kept")

	require.NoError(t, s.Close())
	s.pruner.ask("spans.jsonl", 0)
	s.WaitPruned()
	assert.Len(t, backupsOf(t, ev.dir, "spans.jsonl"), 2, "a closed store prunes no more")
}
