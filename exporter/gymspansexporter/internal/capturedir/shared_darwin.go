// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import "golang.org/x/sys/unix"

// networkFilesystems are the statfs(2) type names (f_fstypename) of darwin's
// filesystems a capture dir is shared over, where several collectors (on
// several hosts) may append to one file: shared_capture_dir defaults to true
// on them. darwin names a filesystem by name, not by magic number.
var networkFilesystems = map[string]bool{
	"nfs":     true,
	"smbfs":   true,
	"afpfs":   true,
	"webdav":  true,
	"macfuse": true, // macFUSE (sshfs, cluster filesystems' clients)
	"osxfuse": true, // macFUSE before 4.0
}

// isNetworkFilesystem: st, the capture dir's statfs(2), is one of networkFilesystems.
func isNetworkFilesystem(st *unix.Statfs_t) bool {
	return networkFilesystems[unix.ByteSliceToString(st.Fstypename[:])]
}
