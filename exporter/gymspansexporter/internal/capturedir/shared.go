// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// sharedCaptureDir resolves shared_capture_dir for the dir behind dirFD.
func sharedCaptureDir(set *bool, dirFD int) (bool, error) {
	if set != nil {
		return *set, nil
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(dirFD, &st); err != nil {
		return true, fmt.Errorf("statfs of the capture dir: %w", err)
	}
	return isNetworkFilesystem(&st), nil
}
