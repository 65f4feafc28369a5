// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"errors"

	"golang.org/x/sys/unix"
)

// watchExit takes hold of pid (a pidfd) and returns what waits for its exit:
// poll(2) on the pidfd; where the kernel has no pidfd, waitReparented; when
// pid is gone already (ESRCH), nothing.
func watchExit(pid int) func() {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		return func() {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
					return
				}
			}
		}
	case errors.Is(err, unix.ENOSYS):
		return func() { waitReparented(pid) }
	}
	return func() {}
}
