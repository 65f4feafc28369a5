// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package capturedir is the gymspans exporter's file layer (design §5.1):
// append-only files directly inside the capture dir, shared with other
// processes (often over NFS). A Store owns the dir's descriptor, the
// bounded cache of append handles and the locks kept between appends;
// Append, Flush, Retire and Close are what the exporter calls.
//
// Every file is opened relative to a descriptor of the capture dir with
// openat(O_NOFOLLOW), must be a regular file with one link (checked before
// the first write through a handle), and is appended to under an exclusive
// flock:
//
//	flock(LOCK_EX) → the file was not removed, and for the rotated combined
//	file the name still leads to it (else reopen: another process rotated it)
//	→ cut a torn tail (no read needed when the size is where our last append
//	ended) → rotate when over size (combined file only: rename to a backup,
//	create the new empty file at once) →
//	writev(2) of the batch's lines (one call per 1024 buffers) → on error or
//	short write, truncate back to the size before → unlock, or keep the lock
//	for the next append for at most lock_hold (lockhold.go).
//
// Handles live in an LRU bounded by max_open_files (the capture-dir
// descriptor counts as one); a handle in use is never evicted. Writes never
// fsync. A background flusher fsyncs dirty handles at most every
// flush_interval; a dirty handle that is evicted is closed without fsync and
// its name kept in a dirty list, which the next flush tick reopens (read-only,
// within the bound) and fsyncs. When a tick has more than syncfsThreshold
// files to sync (Gym's many short-lived rollout files at a high span rate),
// one syncfs(2) of the capture dir's filesystem replaces the per-file
// fsyncs and the reopens (on Linux: darwin has no syncfs, syncfs_darwin.go). A rotated file joins that list too, and the dir is
// fsynced by the same tick: fsyncing up to 100 MB inside the caller's
// append made every rotation a stall of the pipeline (console rotates a few
// times a second at full speed), while the power-loss bound stays the same
// flush_interval as for the file being written. Shutdown fsyncs everything.
// The backups beyond rotation.max_backups are pruned beside the writer
// (prune.go): finding them lists the capture dir, every rollout's files.
//
// Files: layout.go (file names from path_template, and their cache),
// files.go (Open, the safe open, Close), handles.go (the LRU of
// handles within max_open_files), append.go (lock, tail, torn-tail cut,
// write), lockhold.go (locks kept between appends), rotate.go (backups),
// prune.go (old backups removed beside the writer), writev.go (writev(2) in
// bounded chunks; the call itself per platform in writev_<os>.go), fsync.go
// (the flush; syncfs_<os>.go), shared.go (whether the dir is shared; which
// filesystems are shared in shared_<os>.go).
package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
