// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// appendOpts say how appendLines treats one file.
type appendOpts struct {
	kind string    // fileKind*: counted per kind
	rot  *rotation // the combined file's size bound; nil for the others
	// hold keeps the lock after the append for at most lock_hold
	// (lockhold.go). Only the group-commit writer, which owns the kept
	// locks, may set it.
	hold bool
	// before runs under the lock right before the bytes are written, with
	// the file's inode and the offset they will start at (the journal index
	// records them, journal.go); an error cancels the write.
	before func(ino uint64, off int64) error
	// prepare, when set, replaces data and size under the lock, after a
	// torn tail was cut, given the descriptor and the file's size (recovery
	// drops the lines the file already holds, recover.go).
	prepare func(fd int, size int64) ([][]byte, int, error)
}

func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// appendLines appends data (whole lines) to name as described in the file
// comment. It returns errUnsafeFile (wrapped) when name is not a file we may
// write through.
func (s *fileStore) appendLines(name string, data [][]byte, size int, o appendOpts) error {
	h, err := s.acquire(name, o.kind)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		again, err := s.appendLocked(h, data, size, o)
		if errors.Is(err, errUnsafeFile) {
			s.mu.Lock()
			s.dropLocked(h) // keep no descriptor of it
			s.mu.Unlock()
		}
		if err != nil || !again {
			s.release(h)
			return err
		}
		if attempt == 8 {
			s.release(h)
			return fmt.Errorf("append %q: file keeps being replaced", name)
		}
		if h, err = s.reopen(h, o.kind); err != nil {
			return err
		}
	}
}

// appendLocked takes the lock on h (or finds it kept) and appends; again
// reports that h no longer names the current file (replaced, or rotated by
// us) and the caller must reopen and retry.
func (s *fileStore) appendLocked(h *handle, data [][]byte, dataSize int, o appendOpts) (again bool, err error) {
	// A kept lock was held since our last append: no process honouring the
	// lock has rotated the file since. (It may still have been removed by
	// hand, which the fstat sees.)
	rot := o.rot
	kept := h.locked
	if !kept {
		if err := s.lockForAppend(h, o.hold); err != nil {
			return false, fmt.Errorf("lock %q: %w", h.name, err)
		}
		s.obs.locked(o.kind)
	}
	keepLock := false
	defer func() {
		if keepLock {
			if !kept {
				s.keep(h, time.Now())
			}
		} else {
			s.unlockNow(h)
		}
	}()

	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return false, fmt.Errorf("stat %q: %w", h.name, err)
	}
	if st.Nlink == 0 {
		return true, nil // removed
	}
	if !h.checked {
		if err := s.checkOpened(h, &st); err != nil {
			return false, err
		}
	}
	if rot != nil && !kept {
		// Only rotated files are renamed away (by any process sharing the
		// dir, under the lock); check that the name still leads to this file.
		var cur unix.Stat_t
		if err := unix.Fstatat(s.dirFD, h.name, &cur, unix.AT_SYMLINK_NOFOLLOW); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
			return true, nil
		}
	}
	size := st.Size
	if size > 0 && size != h.ourEnd {
		if size, err = s.cutTornTail(h, size); err != nil {
			return false, err
		}
	}
	if rot != nil && size > 0 && size+int64(dataSize) > rot.maxBytes {
		if err := s.rotate(h, rot); err != nil {
			return false, err
		}
		return true, nil
	}
	if o.prepare != nil {
		if data, dataSize, err = o.prepare(h.fd, size); err != nil {
			return false, err
		}
		if dataSize == 0 {
			h.ourEnd = size
			return false, nil
		}
	}
	if o.before != nil {
		if err := o.before(st.Ino, size); err != nil {
			return false, err
		}
	}
	written := 0
	chunks := writeChunks{data: data, left: dataSize}
	for {
		chunk, want := chunks.next()
		if chunk == nil {
			break
		}
		n, werr := s.write(h.name, h.fd, chunk)
		written += max(n, 0)
		if werr == nil && n != want {
			werr = fmt.Errorf("short write (%d of %d bytes): %w", n, want, io.ErrShortWrite)
		}
		if werr != nil {
			if written > 0 {
				// Leave no partial line; if this fails too, the next append cuts it.
				_ = unix.Ftruncate(h.fd, size)
			}
			h.ourEnd = -1
			return false, fmt.Errorf("write %q: %w", h.name, werr)
		}
	}
	h.ourEnd = size + int64(written)
	keepLock = o.hold && s.holdFor > 0
	s.obs.appended(o.kind)
	s.mu.Lock()
	h.dirty = true
	s.mu.Unlock()
	return false, nil
}

// cutTornTail truncates a last line that lacks its newline (left by a crash
// mid-write) and returns the new size.
func (s *fileStore) cutTornTail(h *handle, size int64) (int64, error) {
	var last [1]byte
	if _, err := unix.Pread(h.fd, last[:], size-1); err != nil {
		return size, fmt.Errorf("read tail of %q: %w", h.name, err)
	}
	if last[0] == '\n' {
		return size, nil
	}
	buf := make([]byte, 64*1024)
	end := size
	keep := int64(0)
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := unix.Pread(h.fd, chunk, start); err != nil {
			return size, fmt.Errorf("read tail of %q: %w", h.name, err)
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			keep = start + int64(i) + 1
			break
		}
		end = start
	}
	if err := unix.Ftruncate(h.fd, keep); err != nil {
		return size, fmt.Errorf("cut torn tail of %q: %w", h.name, err)
	}
	s.obs.tornTailCut(h.name)
	return keep, nil
}
