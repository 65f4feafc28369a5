// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSharedByDefaultOnNetworkFilesystems: unset, shared_capture_dir is
// on for a network filesystem and off for a local one; set, it wins.
func TestSharedByDefaultOnNetworkFilesystems(t *testing.T) {
	fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var st unix.Statfs_t
	require.NoError(t, unix.Fstatfs(fd, &st))
	got, err := sharedCaptureDir(nil, fd)
	require.NoError(t, err)
	assert.Equal(t, isNetworkFilesystem(&st), got)
	assert.True(t, networkFilesystems[unix.NFS_SUPER_MAGIC])
	on, off := true, false
	got, err = sharedCaptureDir(&on, fd)
	require.NoError(t, err)
	assert.True(t, got)
	got, err = sharedCaptureDir(&off, fd)
	require.NoError(t, err)
	assert.False(t, got)
}
