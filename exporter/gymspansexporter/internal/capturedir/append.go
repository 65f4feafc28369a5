// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// AppendOpts say how Append treats one file.
type AppendOpts struct {
	Kind   string    // the file's kind, as the Observer counts it
	Rotate *Rotation // the combined file's size bound; nil for the others
	// Hold keeps the lock after the append for at most the hold of
	// HoldLocks (lockhold.go). Only the writer that owns the kept locks
	// (the one HoldLocks's exclusive serializes) may set it.
	Hold bool
	// Before runs under the lock right before the bytes are written, with
	// the file's inode and the offset they will start at (the journal index
	// records them); an error cancels the write.
	Before func(ino uint64, off int64) error
	// Prepare, when set, replaces data and size under the lock, after a
	// torn tail was cut, given the descriptor and the file's size (recovery
	// drops the lines the file already holds).
	Prepare func(fd int, size int64) ([][]byte, int, error)
}

// Append appends data (whole lines) to name as described in the package
// comment. It returns ErrUnsafeFile (wrapped) when name is not a file we may
// write through.
func (s *Store) Append(name string, data [][]byte, size int, o AppendOpts) error {
	h, err := s.acquire(name, o.Kind)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		again, err := s.appendLocked(h, data, size, o)
		if errors.Is(err, ErrUnsafeFile) {
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
		if h, err = s.reopen(h, o.Kind); err != nil {
			return err
		}
	}
}

// appendLocked appends under h's lock (taken, or found kept), or without
// one when the store is alone in the capture dir; again reports that h no
// longer names the current file (replaced, or rotated by us) and the
// caller must reopen and retry. The stages: lock → tail (where the append
// starts) → rotate when over size → prepare (recovery) → before (the
// journal index) → write.
func (s *Store) appendLocked(h *handle, data [][]byte, dataSize int, o AppendOpts) (again bool, err error) {
	kept, err := s.lockStage(h, o)
	if err != nil {
		return false, err
	}
	keepLock := false
	defer func() { s.unlockStage(h, kept, keepLock) }()
	size, ino, again, err := s.tail(h, o, kept)
	if err != nil || again {
		return again, err
	}
	if rot := o.Rotate; rot != nil && size > 0 && size+int64(dataSize) > rot.MaxBytes {
		if err := s.rotate(h, rot); err != nil {
			return false, err
		}
		return true, nil
	}
	if o.Prepare != nil {
		if data, dataSize, err = o.Prepare(h.fd, size); err != nil {
			return false, err
		}
		if dataSize == 0 {
			h.ourEnd = size
			return false, nil
		}
	}
	if o.Before != nil {
		if err := o.Before(ino, size); err != nil {
			return false, err
		}
	}
	if err := s.writeAt(h, data, dataSize, size); err != nil {
		return false, err
	}
	keepLock = o.Hold && s.holdFor > 0
	s.obs.Appended(o.Kind)
	return false, nil
}

// lockStage takes h's lock unless it is kept from an earlier append (kept)
// or the store is alone in the capture dir (no lock is needed: no other
// process appends, cuts or rotates there).
func (s *Store) lockStage(h *handle, o AppendOpts) (kept bool, err error) {
	if s.alone || h.locked {
		return h.locked, nil
	}
	if err := s.lockForAppend(h, o.Hold); err != nil {
		return false, fmt.Errorf("lock %q: %w", h.name, err)
	}
	s.obs.Locked(o.Kind)
	return false, nil
}

// unlockStage keeps the lock just used (keep) or gives it back.
func (s *Store) unlockStage(h *handle, kept, keep bool) {
	switch {
	case s.alone:
	case keep && !kept:
		s.keep(h, time.Now())
	case !keep:
		s.unlockNow(h)
	}
}

// tail returns where the append starts and the file's inode. Alone in the
// capture dir, a handle whose last append (or the first fstat after its
// open) left the size known needs no system call: nothing else can have
// changed the file since. Otherwise an fstat: the file was not removed, a
// new handle's file is one we may write through, the rotated combined file
// still has its name (unless the lock was kept: no process honouring it
// rotated it since), and a torn last line is cut (no read when the size is
// where this store's last append to the same inode ended).
func (s *Store) tail(h *handle, o AppendOpts, kept bool) (size int64, ino uint64, again bool, err error) {
	if s.alone && h.checked && h.ourEnd >= 0 {
		return h.ourEnd, h.ino, false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		return 0, 0, false, fmt.Errorf("stat %q: %w", h.name, err)
	}
	s.obs.Statted(o.Kind)
	if st.Nlink == 0 {
		return 0, 0, true, nil // removed
	}
	if !h.checked {
		if err := s.checkOpened(h, &st); err != nil {
			return 0, 0, false, err
		}
	}
	if o.Rotate != nil && !kept {
		// Only rotated files are renamed away (by any process sharing the
		// dir, under the lock); check that the name still leads to this file.
		var cur unix.Stat_t
		if err := unix.Fstatat(s.dirFD, h.name, &cur, unix.AT_SYMLINK_NOFOLLOW); err != nil || cur.Ino != st.Ino || cur.Dev != st.Dev {
			return 0, 0, true, nil
		}
	}
	known := h.ourEnd >= 0 && h.ino == st.Ino
	h.ino = st.Ino
	size = st.Size
	if size > 0 && (!known || size != h.ourEnd) {
		if size, err = s.cutTornTail(h, size); err != nil {
			return 0, 0, false, err
		}
	}
	return size, st.Ino, false, nil
}

// writeAt writes data at the end of h's file, size bytes long: a write that
// fails or comes short is truncated back to size (if that fails too, the
// next append cuts the partial line).
func (s *Store) writeAt(h *handle, data [][]byte, dataSize int, size int64) error {
	written := 0
	chunks := writeChunks{data: data, left: dataSize}
	for {
		chunk, want := chunks.next()
		if chunk == nil {
			break
		}
		n, werr := s.write(h.name, h.fd, chunk)
		written += max(n, 0)
		// A write that comes short is continued: the next one completes
		// the chunk, or says why the file takes no more (no space left on
		// device), which the error then names.
		for werr == nil && n < want {
			m, err := s.write(h.name, h.fd, skipBytes(chunk, n))
			written += max(m, 0)
			switch {
			case err != nil:
				werr = fmt.Errorf("%d of %d bytes written: %w", n+max(m, 0), want, err)
			case m <= 0:
				werr = fmt.Errorf("short write (%d of %d bytes): %w", n, want, io.ErrShortWrite)
			}
			n += max(m, 0)
		}
		if werr != nil {
			if written > 0 {
				_ = unix.Ftruncate(h.fd, size)
			}
			h.ourEnd = -1
			return fmt.Errorf("write %q: %w", h.name, werr)
		}
	}
	h.ourEnd = size + int64(written)
	s.mu.Lock()
	h.dirty = true
	s.mu.Unlock()
	return nil
}

// skipBytes is what is left of bufs after its first n bytes.
func skipBytes(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) == 0 || n == 0 {
		return bufs
	}
	return append([][]byte{bufs[0][n:]}, bufs[1:]...)
}

// cutTornTail truncates a last line that lacks its newline (left by a crash
// mid-write) and returns the new size.
func (s *Store) cutTornTail(h *handle, size int64) (int64, error) {
	var last [1]byte
	s.obs.TailRead(h.name)
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
	s.obs.TornTailCut(h.name)
	return keep, nil
}
