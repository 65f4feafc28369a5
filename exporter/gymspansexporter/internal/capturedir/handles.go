// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"container/list"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

type handle struct {
	name    string
	fd      int
	refs    int
	dirty   bool
	retired bool // no longer in the cache; closed when refs drops to 0
	// checked: the first append (under the lock, with the fstat it makes
	// anyway) found a regular file with one link; created: we created it.
	checked bool
	created bool
	elem    *list.Element
	// ourEnd is the file size right after our last append (-1: unknown).
	// When the file still has that size, its last byte is our newline and
	// the torn-tail check needs no read.
	ourEnd int64
	ino    uint64 // the file's inode, from the last fstat (0: none yet)
	// locked: the store keeps the file's lock between appends (lockhold.go);
	// lockSeq tells this lock from earlier ones of the handle.
	locked  bool
	lockSeq uint64
}

// reserveLocked makes room for one more descriptor, evicting the least
// recently used idle handle or waiting for one to become idle.
func (s *Store) reserveLocked() {
	for s.open >= s.capacity {
		if !s.evictLocked() {
			s.cond.Wait()
		}
	}
	s.open++
	s.obs.OpenFilesChanged(1)
}

func (s *Store) unreserveLocked() {
	s.open--
	s.obs.OpenFilesChanged(-1)
	s.cond.Broadcast()
}

func (s *Store) evictLocked() bool {
	for e := s.lru.Back(); e != nil; e = e.Prev() {
		h := e.Value.(*handle)
		if h.refs > 0 {
			continue
		}
		s.dropLocked(h)
		return true
	}
	return false
}

// dropLocked removes h from the cache; it is closed now if idle, else when
// released. A dirty file is remembered for the next flush.
func (s *Store) dropLocked(h *handle) {
	if h.retired {
		return
	}
	h.retired = true
	s.lru.Remove(h.elem)
	delete(s.handles, h.name)
	if h.dirty {
		s.closedDirty[h.name] = struct{}{}
	}
	if h.refs == 0 {
		s.closeLocked(h)
	}
}

// closeLocked closes h's descriptor, which gives back a kept lock.
func (s *Store) closeLocked(h *handle) {
	if h.ino != 0 {
		s.opened.Put(h.name, tailMark{ino: h.ino, end: h.ourEnd})
	}
	_ = unix.Close(h.fd)
	h.locked = false
	s.unreserveLocked()
}

// acquire returns the cached handle of name, opening it when needed.
func (s *Store) acquire(name, kind string) (*handle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("exporter is shut down")
	}
	if h := s.handles[name]; h != nil {
		h.refs++
		s.lru.MoveToFront(h.elem)
		return h, nil
	}
	s.reserveLocked()
	fd, created, err := s.openAt(name)
	if err != nil {
		s.unreserveLocked()
		return nil, err
	}
	s.obs.Opened(kind, created)
	h := &handle{name: name, fd: fd, refs: 1, ourEnd: -1, created: created}
	if m, ok := s.opened.Get(name); ok && !created {
		// Where this store's last append to the name ended: when the file
		// is still that inode of that size, the tail needs no read.
		h.ourEnd, h.ino = m.end, m.ino
	}
	h.elem = s.lru.PushFront(h)
	s.handles[name] = h
	return h, nil
}

// retire closes name's handle once it is idle (now, if it is): a rollout
// whose root was written is done, and its descriptor is better spent on
// one in flight than left to the least-recently-used order.
func (s *Store) Retire(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.handles[name]; h != nil {
		s.dropLocked(h)
	}
}

func (s *Store) release(h *handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.refs--
	if h.refs == 0 {
		if h.retired {
			s.closeLocked(h)
		} else {
			s.cond.Broadcast()
		}
	}
}

// reopen retires h (the name now points at another file) and returns a
// fresh handle for name.
func (s *Store) reopen(h *handle, kind string) (*handle, error) {
	s.mu.Lock()
	if !h.retired {
		s.dropLocked(h)
	}
	s.mu.Unlock()
	s.release(h)
	return s.acquire(h.name, kind)
}

// OpenRead opens name in the dir read-only, with one of the descriptors
// MaxOpenFiles bounds (waiting for one, evicting an idle handle); give it
// back with CloseRead. Descriptors inside the dir are only opened and closed
// under s.mu, so the bound holds at every instant.
func (s *Store) OpenRead(name string) (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserveLocked()
	fd, err := unix.Openat(s.dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		s.unreserveLocked()
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// CloseRead closes a file of OpenRead and gives its descriptor back.
func (s *Store) CloseRead(f *os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = f.Close()
	s.unreserveLocked()
}
