// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import "golang.org/x/sys/unix"

// syncfs is syncfs(2), retried on EINTR.
func syncfs(fd int) error {
	for {
		err := unix.Syncfs(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// syncfsThreshold is the number of files to sync in one flush above which
// one syncfs(2) is cheaper than an fsync (and, for evicted files, an open
// and a close) per file.
const syncfsThreshold = 16
