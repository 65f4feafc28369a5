// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// syncDirEvery syncs dir's filesystem every d, as the exporter's flusher
// does, until the returned stop is called.
func syncDirEvery(b *testing.B, dir string, d time.Duration) (stop func()) {
	dirFD, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(b, err)
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				_ = unix.Syncfs(dirFD) // an EINTR skips one tick
			}
		}
	}()
	return func() {
		close(quit)
		<-stopped
		_ = unix.Close(dirFD)
	}
}
