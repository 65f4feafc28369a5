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
// once however many spans ask. Gym appends whole lines under flock; a line
// not yet ended waits in partial, bounded by maxLine.
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
}

// errNotRegular is a capture file that is not a regular file (a FIFO, a
// device, a directory): it is never read.
var errNotRegular = errors.New("not a regular file")

// read calls each with every line the file got since the last read and
// returns how many lines were longer than maxLine (skipped). name is opened
// relative to dirfd with O_NOFOLLOW: a symlink is never followed. A missing
// file is no error (Gym has not written the rollout's first line yet). A
// file replaced or cut shorter is read again from its start.
func (t *captureTail) read(dirfd int, name string, maxLine int, buf []byte, each func([]byte)) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("opening capture file %q: %w", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("stat of capture file %q: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, fmt.Errorf("capture file %q: %w", name, errNotRegular)
	}
	if devOf(&st) != t.dev || st.Ino != t.ino || st.Size < t.offset {
		*t = captureTail{dev: devOf(&st), ino: st.Ino, file: t.file + 1}
	}
	t.exists = true
	oversized := 0
	for t.offset < st.Size {
		n, err := unix.Pread(fd, buf[:min(int64(len(buf)), st.Size-t.offset)], t.offset)
		if err != nil {
			return oversized, fmt.Errorf("reading capture file %q: %w", name, err)
		}
		if n == 0 {
			break
		}
		t.offset += int64(n)
		oversized += t.split(buf[:n], maxLine, each)
	}
	return oversized, nil
}

// grown reports whether the file under name may hold lines not read yet:
// one fstatat, without following a symlink, so that a file that did not
// change is not opened. A symlink or a missing file has not grown (read
// refuses the one and skips the other).
func (t *captureTail) grown(dirfd int, name string) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.exists = false
		return false
	}
	t.exists = true
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return t.ino == 0 // read once, to refuse and count it
	}
	return devOf(&st) != t.dev || st.Ino != t.ino || st.Size != t.offset
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
