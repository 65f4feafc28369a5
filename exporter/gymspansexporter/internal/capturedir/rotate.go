// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Rotation bounds one file by size with a bounded number of backups.
type Rotation struct {
	MaxBytes   int64
	MaxBackups int
}

// backupTimeLayout is the UTC time in a backup's name: "<stem>-<UTC time>.<ext>"
// for "<stem>.<ext>".
const backupTimeLayout = "2006-01-02T15-04-05.000000000"

func backupParts(name string) (stem, ext string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i], name[i:]
	}
	return name, ""
}

// IsBackupName reports whether n is a rotated backup of name.
func IsBackupName(name, n string) bool {
	stem, ext := backupParts(name)
	if len(n) <= len(stem)+1+len(ext) || !strings.HasPrefix(n, stem+"-") || !strings.HasSuffix(n, ext) {
		return false
	}
	_, err := time.Parse(backupTimeLayout, n[len(stem)+1:len(n)-len(ext)])
	return err == nil
}

// rotate renames the locked file h to a timestamped backup, leaves it and
// the dir to the next flush, and has old backups pruned (prune.go). Called under h's lock,
// so rotators of the same file are serialized across processes.
func (s *Store) rotate(h *handle, rot *Rotation) error {
	stem, ext := backupParts(h.name)
	now := time.Now().UTC()
	var backup string
	for i := 0; ; i++ {
		backup = stem + "-" + now.Add(time.Duration(i)).Format(backupTimeLayout) + ext
		var st unix.Stat_t
		if err := unix.Fstatat(s.dirFD, backup, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			break
		}
		if i > 1000 {
			return fmt.Errorf("rotate %q: no free backup name", h.name)
		}
	}
	if err := unix.Renameat(s.dirFD, h.name, s.dirFD, backup); err != nil {
		return fmt.Errorf("rotate %q: %w", h.name, err)
	}
	s.createEmpty(h.name)
	s.mu.Lock()
	// Always: the backup may also hold the writes of an earlier handle of
	// the name that was evicted before its fsync.
	h.dirty = false
	s.closedDirty[backup] = struct{}{}
	s.dirDirty = true
	s.mu.Unlock()
	s.obs.Rotated(h.name)
	s.pruner.ask(h.name, rot.MaxBackups)
	return nil
}

// createEmpty creates name, empty, right after a rotation renamed it away
// (still under the old file's lock), so a reader following the name (tail
// -F) finds the new file at once, not at the next append. Best effort: the
// next append creates it when this fails, and one that exists already
// (another process created it) is left as it is.
func (s *Store) createEmpty(name string) {
	fd, err := unix.Openat(s.dirFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, s.filePerm)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && permissions(&st) != s.filePerm {
		_ = unix.Fchmod(fd, s.filePerm)
	}
	_ = unix.Close(fd)
}
