// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import "golang.org/x/sys/unix"

// networkFilesystems are the statfs(2) magics of filesystems a capture dir
// is shared over, where several collectors (on several hosts) may append to
// one file: shared_capture_dir defaults to true on them.
var networkFilesystems = map[int64]bool{
	unix.NFS_SUPER_MAGIC:   true,
	unix.SMB_SUPER_MAGIC:   true,
	0xff534d42:             true, // CIFS
	0xfe534d42:             true, // SMB2
	unix.FUSE_SUPER_MAGIC:  true,
	unix.V9FS_MAGIC:        true,
	unix.CEPH_SUPER_MAGIC:  true,
	unix.AFS_FS_MAGIC:      true,
	unix.OCFS2_SUPER_MAGIC: true,
	0x01161970:             true, // GFS2
	unix.CODA_SUPER_MAGIC:  true,
	0x0bd00bd0:             true, // Lustre
	0x47504653:             true, // GPFS
	0x013111a8:             true, // IBRIX
	0xaad7aaea:             true, // PanFS
}

// isNetworkFilesystem: st, the capture dir's statfs(2), is one of networkFilesystems.
func isNetworkFilesystem(st *unix.Statfs_t) bool {
	return networkFilesystems[int64(st.Type)] //nolint:unconvert // Statfs_t.Type is not int64 on every platform
}
