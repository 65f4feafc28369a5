// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errors of captureDir.open, mapped to HTTP statuses by the handler.
var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
)

// captureDir reads files of one directory: only names that passed the rule
// (fileName), opened with openat(O_NOFOLLOW) relative to the directory's own
// descriptor, and only regular files with one name. A symlink, a hard link,
// a FIFO or a directory with a valid name is refused; nothing outside the
// directory is ever opened.
//
// The directory may not exist yet (the viewer starts before the exporter
// creates it): it is opened on first use and until then looks empty.
type captureDir struct {
	path string

	mu sync.Mutex
	fd int // -1 until opened
}

func newCaptureDir(path string) *captureDir { return &captureDir{path: path, fd: -1} }

func (d *captureDir) dirFD() (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		return d.fd, nil
	}
	fd, err := unix.Open(d.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	d.fd = fd
	return fd, nil
}

// open opens name for reading. A missing file is fs.ErrNotExist; a name that
// is not a regular file (a symlink among them) is errNotRegular.
func (d *captureDir) open(name fileName) (*os.File, os.FileInfo, error) {
	if name.s == "" {
		return nil, nil, fs.ErrInvalid
	}
	dirfd, err := d.dirFD()
	if err != nil {
		return nil, nil, err
	}
	// O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
	fd, err := unix.Openat(dirfd, name.s, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, nil, fmt.Errorf("%s: %w (a symbolic link)", name.s, errNotRegular)
	case err != nil:
		return nil, nil, &fs.PathError{Op: "open", Path: name.s, Err: err}
	}
	f := os.NewFile(uintptr(fd), name.s)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (%s)", name.s, errNotRegular, st.Mode().Type())
	}
	// A second name of a file elsewhere, as gymspans refuses it too: its
	// writers never make one.
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Nlink > 1 {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (a hard link)", name.s, errNotRegular)
	}
	return f, st, nil
}

// fileIdentity is st's device and inode (zero where the platform has none),
// which tell a file replaced under its name from the same file grown.
func fileIdentity(st fs.FileInfo) (dev, ino uint64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), sys.Ino //nolint:unconvert // int32 on darwin
	}
	return 0, 0
}

// eachEntry calls f with the name of each regular file of the directory (the
// types come from getdents; no file is opened), a few thousand entries read
// at a time: a dir of millions of files is never held as a list. A
// directory that does not exist yet has none.
func (d *captureDir) eachEntry(f func(name string)) error {
	dirfd, err := d.dirFD()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// A descriptor of its own: reading a directory moves its offset.
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	dir := os.NewFile(uintptr(fd), d.path)
	defer dir.Close()
	for {
		des, err := dir.ReadDir(4096)
		for _, de := range des {
			if de.Type().IsRegular() {
				f(de.Name())
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func (d *captureDir) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}
