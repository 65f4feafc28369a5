// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import "golang.org/x/sys/unix"

// Writev is writev(2), retried on EINTR. On darwin a system call goes
// through libSystem (a raw SYS_WRITEV is not a stable interface there), so
// this is unix.Writev, which builds its iovecs on the heap.
func Writev(_ string, fd int, iovs [][]byte) (int, error) {
	for {
		n, err := unix.Writev(fd, iovs)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}
