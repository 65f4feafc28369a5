// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package eintr holds the system calls the file layers make that a signal
// can interrupt, retried until they are not.
package eintr // import "github.com/otelcol-gym/otelcol-gym/internal/eintr"

import "golang.org/x/sys/unix"

// Flock is flock(2) retried on EINTR.
func Flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}
