// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

// The file side of a flush, shared by every writer of one directory:
//
//	open <dir>/.service_map.lock (O_NOFOLLOW) → flock(LOCK_EX) →
//	read service_map.json (missing: empty; corrupt or not a regular file:
//	renamed aside to service_map.json.corrupt-<unix>; other version: fail) →
//	add the delta → write service_map.json.tmp-<pid>, fsync, rename →
//	the same for service_map.md → fsync the dir → unlock.
//
// Every name is opened relative to a descriptor of the directory with
// O_NOFOLLOW, and the files are replaced by rename, never written through,
// so a symlink planted under one of the names is replaced, not followed.

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/eintr"
)

// maxFileBytes bounds what is read of service_map.json; a bigger file is
// treated as corrupt. 10,000 edges with full sketches are about 60 MiB.
const maxFileBytes = 256 << 20

// commit merges delta into the files. committed reports that
// service_map.json now holds delta: from then on the delta must not be
// flushed again, even when a later step (the Markdown, the dir fsync) fails.
//
// addrs are this writer's learned addresses: with those in the file (up to
// MaxAddresses in all) they fold the host:port edges of the file and of the
// delta, and are written back.
//
// positions are the writers' positions the delta reaches, forget the
// writers to drop (positions.go).
func (m *Map) commit(delta table, addrs addrTable, positions writerTable, forget map[string]bool) (committed bool, err error) {
	dirFD, err := unix.Open(m.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open %q: %w", m.dir, err)
	}
	defer unix.Close(dirFD)
	unlock, err := m.lock(dirFD)
	if err != nil {
		return false, err
	}
	defer unlock()

	doc, err := m.readLocked(dirFD)
	if err != nil {
		return false, err
	}
	onDisk := doc.edges
	onDisk.merge(delta)
	addrs = unionAddrs(addrs, doc.addrs, m.opts.MaxAddresses)
	onDisk.fold(addrs) // self calls made by folding are dropped (README)
	writers := doc.writers.merge(positions, forget)
	if err := writeAtomic(dirFD, m.opts.JSONFile, encodeDoc(onDisk, addrs, writers), m.opts.FileMode); err != nil {
		return false, err
	}
	var errs []error
	if err := writeAtomic(dirFD, m.opts.MarkdownFile, encodeMarkdown(onDisk, m.opts.JSONFile), m.opts.FileMode); err != nil {
		errs = append(errs, err)
	}
	if err := fsync(dirFD); err != nil {
		errs = append(errs, fmt.Errorf("fsync %q: %w", m.dir, err))
	}
	return true, errors.Join(errs...)
}

// lock takes the exclusive lock of the directory's service map; unlock
// gives it back.
func (m *Map) lock(dirFD int) (unlock func(), err error) {
	lockFD, err := openat(dirFD, m.lockName, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, m.opts.FileMode)
	if err != nil {
		return nil, fmt.Errorf("open lock file %q: %w", m.lockName, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(lockFD, &st); err != nil {
		_ = unix.Close(lockFD)
		return nil, fmt.Errorf("stat lock file %q: %w", m.lockName, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(lockFD)
		return nil, fmt.Errorf("lock file %q is not a regular file", m.lockName)
	}
	if err := eintr.Flock(lockFD, unix.LOCK_EX); err != nil {
		_ = unix.Close(lockFD)
		return nil, fmt.Errorf("lock %q: %w", m.lockName, err)
	}
	return func() {
		_ = eintr.Flock(lockFD, unix.LOCK_UN)
		_ = unix.Close(lockFD)
	}, nil
}

// fileDoc is what service_map.json holds.
type fileDoc struct {
	edges   table
	addrs   addrTable
	writers writerTable
}

// readLocked reads the JSON file under the lock. A missing file is an empty
// table; one that is not a service map is moved aside (and counted, logged)
// and read as empty; a file of another version is an error.
func (m *Map) readLocked(dirFD int) (fileDoc, error) {
	empty := fileDoc{edges: table{}}
	name := m.opts.JSONFile
	fd, err := openat(dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return empty, nil
	case errors.Is(err, unix.ELOOP):
		return empty, m.moveAside(dirFD, errors.New("a symbolic link"))
	case err != nil:
		return fileDoc{}, fmt.Errorf("open %q: %w", name, err)
	}
	data, err := readRegular(fd)
	_ = unix.Close(fd)
	if errors.Is(err, errCorrupt) {
		return empty, m.moveAside(dirFD, err)
	}
	if err != nil {
		return fileDoc{}, fmt.Errorf("read %q: %w", name, err)
	}
	t, addrs, writers, err := decodeDoc(data, m.opts.MaxBins)
	switch {
	case errors.Is(err, errCorrupt):
		return empty, m.moveAside(dirFD, err)
	case err != nil:
		return fileDoc{}, fmt.Errorf("%q: %w", name, err)
	}
	return fileDoc{edges: t, addrs: addrs, writers: writers}, nil
}

// readRegular reads a whole regular file of at most maxFileBytes.
func readRegular(fd int) ([]byte, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: not a regular file", errCorrupt)
	}
	if st.Size > maxFileBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errCorrupt, st.Size, maxFileBytes)
	}
	data := make([]byte, 0, st.Size+512)
	for {
		if len(data) == cap(data) {
			if len(data) > maxFileBytes {
				return nil, fmt.Errorf("%w: more than %d bytes", errCorrupt, maxFileBytes)
			}
			data = append(data, 0)[:len(data)]
		}
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return data, nil
		}
		data = data[:len(data)+n]
	}
}

// moveAside renames the JSON file to <name>.corrupt-<unix seconds>[-n] and
// logs why; the next write starts from an empty table.
func (m *Map) moveAside(dirFD int, why error) error {
	name := m.opts.JSONFile
	base := name + ".corrupt-" + strconv.FormatInt(m.opts.now().Unix(), 10)
	target := base
	for n := 1; ; n++ {
		var st unix.Stat_t
		err := unix.Fstatat(dirFD, target, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			break
		}
		if err != nil {
			return fmt.Errorf("move %q aside: %w", name, err)
		}
		if n == 1000 {
			return fmt.Errorf("move %q aside: %q and 999 more names taken", name, base)
		}
		target = base + "-" + strconv.Itoa(n)
	}
	if err := unix.Renameat(dirFD, name, dirFD, target); err != nil {
		return fmt.Errorf("move %q aside to %q: %w", name, target, err)
	}
	m.mu.Lock()
	m.stats.CorruptFiles++
	m.mu.Unlock()
	m.opts.Logger.Warn("Service map file is not readable; moved aside and started afresh",
		zap.String("file", name), zap.String("moved_to", target), zap.Error(why))
	return nil
}

// writeAtomic replaces name with data: a fresh <name>.tmp-<pid> (any stale
// one removed first, O_EXCL so nothing is followed), write, fsync, rename.
func writeAtomic(dirFD int, name string, data []byte, mode os.FileMode) (err error) {
	tmp := name + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := unix.Unlinkat(dirFD, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove stale %q: %w", tmp, err)
	}
	fd, err := openat(dirFD, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return fmt.Errorf("create %q: %w", tmp, err)
	}
	defer func() {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		if err != nil {
			_ = unix.Unlinkat(dirFD, tmp, 0)
		}
	}()
	for p := data; len(p) > 0; {
		n, werr := unix.Write(fd, p)
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			return fmt.Errorf("write %q: %w", tmp, werr)
		}
		p = p[n:]
	}
	if err := fsync(fd); err != nil {
		return fmt.Errorf("fsync %q: %w", tmp, err)
	}
	cerr := unix.Close(fd)
	fd = -1
	if cerr != nil {
		return fmt.Errorf("close %q: %w", tmp, cerr)
	}
	if err := unix.Renameat(dirFD, tmp, dirFD, name); err != nil {
		return fmt.Errorf("rename %q to %q: %w", tmp, name, err)
	}
	return nil
}

func openat(dirFD int, name string, flags int, mode os.FileMode) (int, error) {
	for {
		fd, err := unix.Openat(dirFD, name, flags, uint32(mode.Perm()))
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fsync(fd int) error {
	for {
		if err := unix.Fsync(fd); err != unix.EINTR {
			return err
		}
	}
}
