// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// captureTail follows one rollout's capture file by offset as Gym appends to
// it: each read takes only the bytes after the last one, so a file is read
// once however many spans ask. The file stays open between reads (fd; the
// processor bounds how many are open), so that a read of a file that did
// not grow is one pread. Gym appends whole lines under flock; a line not
// yet ended waits in partial, bounded by maxLine.
type captureTail struct {
	offset   int64
	partial  []byte
	skipping bool // inside a line longer than maxLine: dropped up to its newline
	dev, ino uint64
	// file counts the files followed under the name: it grows when the
	// file is replaced or cut, and the lines read before are another file's.
	file int
	// exists: the last look found a file under the name.
	exists bool
	// fd is the open file, valid while isOpen.
	fd     int
	isOpen bool
}

// errNotRegular is a capture file that is not a regular file (a FIFO, a
// device, a directory): it is never read.
var errNotRegular = errors.New("not a regular file")

// read calls each with every line the file got since the last read and
// returns how many lines were longer than maxLine (skipped). A file not
// open is opened relative to dirfd with O_NOFOLLOW: a symlink is never
// followed. An open file is read without looking at its name unless check:
// then a file replaced under the name, removed or cut shorter is seen (a
// file replaced or cut is read again from its start). A missing file is no
// error (Gym has not written the rollout's first line yet).
func (t *captureTail) read(dirfd int, name string, check bool, maxLine int, buf []byte, each func([]byte)) (int, error) {
	if t.isOpen && check {
		if err := t.checkName(dirfd, name); err != nil {
			return 0, err
		}
	}
	if !t.isOpen {
		if err := t.open(dirfd, name); err != nil || !t.isOpen {
			return 0, err
		}
	}
	oversized := 0
	for {
		n, err := unix.Pread(t.fd, buf, t.offset)
		if err != nil {
			return oversized, fmt.Errorf("reading capture file %q: %w", name, err)
		}
		t.offset += int64(n)
		oversized += t.split(buf[:n], maxLine, each)
		if n < len(buf) {
			return oversized, nil // a short read of a regular file: its end
		}
	}
}

// open opens the file under name; a missing one leaves the tail closed.
func (t *captureTail) open(dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	t.exists = !errors.Is(err, unix.ENOENT)
	if !t.exists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening capture file %q: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("stat of capture file %q: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return fmt.Errorf("capture file %q: %w", name, errNotRegular)
	}
	t.follow(&st)
	t.fd, t.isOpen = fd, true
	return nil
}

// checkName closes the open file when the name no longer holds it, and
// starts the file again when it was cut shorter than what was read.
func (t *captureTail) checkName(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.close()
		if errors.Is(err, unix.ENOENT) {
			t.exists = false
			return nil
		}
		return fmt.Errorf("stat of capture file %q: %w", name, err)
	}
	if devOf(&st) != t.dev || st.Ino != t.ino {
		t.close() // replaced (or a symlink now): open looks at it
		return nil
	}
	t.follow(&st)
	return nil
}

// follow starts the tail again when st is another file than the one
// followed, or the same cut shorter than what was read.
func (t *captureTail) follow(st *unix.Stat_t) {
	if devOf(st) != t.dev || st.Ino != t.ino || st.Size < t.offset {
		fd, isOpen := t.fd, t.isOpen
		*t = captureTail{dev: devOf(st), ino: st.Ino, file: t.file + 1, exists: true, fd: fd, isOpen: isOpen}
	}
}

// close closes the open file, keeping where the tail is: a later open of
// the same file goes on from there.
func (t *captureTail) close() {
	if t.isOpen {
		_ = unix.Close(t.fd)
		t.fd, t.isOpen = 0, false
	}
}

// devOf is the file's device number as a uint64 (Stat_t.Dev is narrower on
// some platforms).
func devOf(st *unix.Stat_t) uint64 {
	return uint64(st.Dev) //nolint:unconvert // not uint64 on every platform
}

// split hands each whole line of chunk (with what partial held) to each.
func (t *captureTail) split(chunk []byte, maxLine int, each func([]byte)) int {
	oversized := 0
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			if !t.skipping {
				if len(t.partial)+len(chunk) > maxLine {
					t.partial, t.skipping = nil, true
				} else {
					t.partial = append(t.partial, chunk...)
				}
			}
			return oversized
		}
		switch {
		case t.skipping:
			t.skipping = false
			oversized++
		case len(t.partial)+i > maxLine:
			oversized++
		case len(t.partial) > 0:
			each(append(t.partial, chunk[:i]...))
		default:
			each(chunk[:i])
		}
		t.partial = reuse(t.partial)
		chunk = chunk[i+1:]
	}
	return oversized
}

// reuse empties a line buffer, keeping it only when it is small: a tail
// that once held a long line does not keep its memory.
func reuse(b []byte) []byte {
	if cap(b) > 64<<10 {
		return nil
	}
	return b[:0]
}
