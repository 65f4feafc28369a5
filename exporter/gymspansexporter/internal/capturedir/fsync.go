// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// flush fsyncs every file written since the last flush: cached dirty
// handles one at a time (so at most one is pinned by the flusher), then the
// files evicted or rotated while dirty, reopened read-only within the
// descriptor bound, then the dir after a rotation; or, above
// syncfsThreshold files, the whole filesystem at once.
func (s *Store) Flush() error {
	s.mu.Lock()
	var dirty []string
	for n, h := range s.handles {
		if h.dirty {
			dirty = append(dirty, n)
		}
	}
	if len(dirty)+len(s.closedDirty) > s.syncfsAbove {
		// Clear the marks first: a write after this is synced by the next
		// flush, one before it by this syncfs.
		for _, n := range dirty {
			s.handles[n].dirty = false
		}
		clear(s.closedDirty)
		s.dirDirty = false
		s.mu.Unlock()
		s.syncfsCalls.Add(1)
		if err := syncfs(s.dirFD); err != nil {
			s.obs.FsyncFailed(s.dirPath, err)
			return fmt.Errorf("syncfs of %q: %w", s.dirPath, err)
		}
		return nil
	}
	s.mu.Unlock()
	var errs []error
	for _, n := range dirty {
		s.mu.Lock()
		h := s.handles[n]
		if h == nil || !h.dirty {
			s.mu.Unlock()
			continue // evicted meanwhile: it is in closedDirty
		}
		h.refs++
		h.dirty = false
		s.mu.Unlock()
		if err := unix.Fsync(h.fd); err != nil {
			s.obs.FsyncFailed(n, err)
			errs = append(errs, fmt.Errorf("fsync %q: %w", n, err))
		}
		s.release(h)
	}
	s.mu.Lock()
	closed := s.closedDirty
	s.closedDirty = map[string]struct{}{}
	dirDirty := s.dirDirty
	s.dirDirty = false
	s.mu.Unlock()
	for n := range closed {
		if err := s.fsyncByName(n); err != nil {
			s.obs.FsyncFailed(n, err)
			errs = append(errs, err)
		}
	}
	if dirDirty {
		if err := unix.Fsync(s.dirFD); err != nil {
			s.obs.FsyncFailed(s.dirPath, err)
			errs = append(errs, fmt.Errorf("fsync %q: %w", s.dirPath, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) fsyncByName(n string) error {
	f, err := s.OpenRead(n)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil // rotated or removed; rotation fsynced it
		}
		return fmt.Errorf("reopen %q for fsync: %w", n, err)
	}
	serr := unix.Fsync(int(f.Fd()))
	s.CloseRead(f)
	if serr != nil {
		return fmt.Errorf("fsync %q: %w", n, serr)
	}
	return nil
}
