// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"testing"
	"time"
)

// syncDirEvery: darwin has no syncfs(2), so the benchmarks that sync the
// filesystem as the Linux flusher does are skipped.
func syncDirEvery(b *testing.B, _ string, _ time.Duration) (stop func()) {
	b.Skip("no syncfs(2) on darwin")
	return func() {}
}
