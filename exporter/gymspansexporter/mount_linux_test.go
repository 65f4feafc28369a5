// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size at dir (read-only with readOnly),
// unmounted when t ends.
func mountTmpfs(t *testing.T, dir, size string, readOnly bool) error {
	var flags uintptr
	if readOnly {
		flags = unix.MS_RDONLY
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
		return err
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return nil
}
