// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writev is writev(2) with the iovecs on the stack, retried on EINTR.
// Not unix.Writev: that heap-allocates its iovec slice whenever a call has
// more than 8 buffers, as an OTLP/JSON file's append usually has, and hands
// EINTR back.
func Writev(_ string, fd int, iovs [][]byte) (int, error) {
	var scratch [IovMax]unix.Iovec
	vec := scratch[:0]
	for _, b := range iovs {
		if len(b) == 0 {
			continue
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vec = append(vec, v)
	}
	if len(vec) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vec[0])), uintptr(len(vec)))
		runtime.KeepAlive(iovs)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}
