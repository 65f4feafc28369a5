// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAloneAppendsReadNothing (issue #29): alone in the capture dir (a
// local dir, shared_capture_dir unset), appends take no lock, and a file
// is fstat'ed once per handle (its first append), not per append: five
// flushes of new lines to one rollout file, and five appends to the
// combined file, make one stat each and no lock; shared, every append
// locks and stats.
func TestAloneAppendsReadNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{{"alone", nil}, {"shared", func(c *Config) { shared(c); c.LockHold = 0 }}} {
		t.Run(tc.name, func(t *testing.T) {
			e, tel := newTestExporter(t, tc.mutate)
			startExporter(t, e)
			const pushes = 5
			for i := range pushes {
				require.NoError(t, e.pushTraces(context.Background(), withoutRoots(gymTraces(uint64(i+1), 1, 3))))
				writePendingNow(t, e)
			}
			assert.Len(t, readLines(t, filepath.Join(e.cfg.CaptureDir, "0-0.spans.jsonl")), pushes*3)
			for _, kind := range []string{fileKindRollout, fileKindCombined} {
				appends := metricByAttr(t, tel, metricAppends, "file")[kind]
				require.Equal(t, int64(pushes), appends, kind)
				stats, locks := metricByAttr(t, tel, metricStats, "file")[kind], metricByAttr(t, tel, metricLocks, "file")[kind]
				if tc.mutate == nil {
					assert.Equal(t, int64(1), stats, "%s: one fstat, at the first append", kind)
					assert.Zero(t, locks, kind)
				} else {
					assert.Equal(t, appends, stats, kind)
					assert.Equal(t, appends, locks, kind)
				}
			}
			assert.Zero(t, sum(metricByAttr(t, tel, metricTailReads, "")))
		})
	}
}
