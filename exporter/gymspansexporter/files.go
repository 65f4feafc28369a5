// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// The file layer of design §5.1: append-only files directly inside the capture
// dir, shared with other processes (often over NFS).
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
// fsyncs and the reopens. A rotated file joins that list too, and the dir is
// fsynced by the same tick: fsyncing up to 100 MB inside the caller's
// append made every rotation a stall of the pipeline (console rotates a few
// times a second at full speed), while the power-loss bound stays the same
// flush_interval as for the file being written. Shutdown fsyncs everything.

import (
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"

	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// errUnsafeFile marks a name that exists in the capture dir as something we
// must not write through: a symlink, a non-regular file, or a hard link.
var errUnsafeFile = errors.New("not a regular single-link file")

// fileStore owns the capture-dir descriptor and the bounded handle cache.
type fileStore struct {
	dirPath  string
	dirFD    int
	filePerm uint32
	capacity int // handles plus flusher reopens; the dir fd is not included
	write    sysWrite
	obs      storeObserver

	mu      sync.Mutex
	cond    *sync.Cond
	handles map[string]*handle
	opened  *bounded.Ring[string, tailMark] // names opened before (openAt), and where our appends ended
	lru     *list.List                      // front = most recently used
	open    int                             // descriptors held (handles, retired handles, flusher reopens)
	// closedDirty names files closed (evicted) or renamed (rotated) before
	// their last write was fsynced; dirDirty marks a rename not yet fsynced.
	closedDirty map[string]struct{}
	dirDirty    bool
	closed      bool
	// alone: no other process appends in the capture dir
	// (shared_capture_dir), so appends take no lock and, once a handle's
	// size is known, no fstat.
	alone       bool
	syncfsAbove int          // syncfsThreshold; tests raise it to keep the per-file path
	syncfsCalls atomic.Int64 // flushes done with one syncfs (tests read it)

	// Locks kept between appends (lockhold.go); kept and lockSeq are the
	// writer's.
	holdFor   time.Duration
	exclusive func(f func()) bool
	kept      []keptLock
	lockSeq   uint64
	holdTimer *time.Timer
}

// storeObserver receives the file layer's events for the exporter's metrics.
// kind is the appendOpts kind of the file (fileKind*).
type storeObserver interface {
	tornTailCut(name string)
	tailRead(name string)
	statted(kind string)
	rotated(name string)
	openFilesChanged(delta int)
	fsyncFailed(name string, err error)
	opened(kind string, created bool)
	locked(kind string)
	appended(kind string)
}

func openFileStore(dir string, filePerm os.FileMode, maxOpenFiles int, obs storeObserver) (*fileStore, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open capture dir %q: %w", dir, err)
	}
	s := &fileStore{
		dirPath:     dir,
		dirFD:       fd,
		filePerm:    uint32(filePerm.Perm()),
		capacity:    maxOpenFiles - 1,
		write:       defaultWrite,
		obs:         obs,
		handles:     map[string]*handle{},
		opened:      bounded.NewRing[string, tailMark](maxOpenedNames),
		lru:         list.New(),
		closedDirty: map[string]struct{}{},
		syncfsAbove: syncfsThreshold,
	}
	s.cond = sync.NewCond(&s.mu)
	return s, nil
}

// openAt opens name inside the capture dir for appending, creating it with
// the configured permissions when it does not exist. A name this store
// opened before (a rollout's file reopened after its handle was evicted)
// takes one openat; a name it never opened (usually a new rollout's file) is
// created first, also one openat when it does not exist (two: an open that
// failed with ENOENT, then the create, was what every new rollout cost, and
// on NFS every open is a round trip). The first append checks what was
// opened (checkOpened).
func (s *fileStore) openAt(name string) (fd int, created bool, err error) {
	const base = unix.O_RDWR | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	if _, before := s.opened.Get(name); !before {
		s.opened.Put(name, tailMark{end: -1})
		fd, err = unix.Openat(s.dirFD, name, base|unix.O_CREAT|unix.O_EXCL, s.filePerm)
		if err == nil {
			return fd, true, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return -1, false, openError(name, err)
		}
	}
	fd, err = unix.Openat(s.dirFD, name, base, 0)
	for attempt := 0; errors.Is(err, unix.ENOENT) && attempt < 8; attempt++ {
		fd, err = unix.Openat(s.dirFD, name, base|unix.O_CREAT|unix.O_EXCL, s.filePerm)
		if err == nil {
			created = true
			break
		}
		if errors.Is(err, unix.EEXIST) { // another process created it meanwhile
			fd, err = unix.Openat(s.dirFD, name, base, 0)
		}
	}
	if err != nil {
		return -1, false, openError(name, err)
	}
	return fd, created, nil
}

// openError wraps a failed open; a name that is not a file we may write
// through is errUnsafeFile.
func openError(name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("open %q: %w (%w)", name, errUnsafeFile, err)
	}
	return fmt.Errorf("open %q: %w", name, err)
}

// tailMark is where this store's last append through a closed handle of a
// name ended (end -1: unknown), and in which inode.
type tailMark struct {
	ino uint64
	end int64
}

// maxOpenedNames bounds the names a store remembers having opened.
const maxOpenedNames = 1 << 14

// checkOpened refuses anything but a regular file with a single link (a
// hard link could lead outside the capture dir) before the first write
// through a new handle, with the fstat the append makes anyway, and widens
// a created file's mode that the umask narrowed.
func (s *fileStore) checkOpened(h *handle, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return fmt.Errorf("open %q: %w", h.name, errUnsafeFile)
	}
	if h.created && st.Mode&0o777 != s.filePerm {
		_ = unix.Fchmod(h.fd, s.filePerm) // best effort
	}
	h.checked = true
	return nil
}

// close fsyncs and closes every handle and the capture-dir descriptor.
func (s *fileStore) close() error {
	err := s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.holdTimer != nil {
		s.holdTimer.Stop()
	}
	for _, h := range s.handles {
		if h.refs == 0 {
			s.dropLocked(h)
		}
	}
	_ = unix.Fsync(s.dirFD)
	if cerr := unix.Close(s.dirFD); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}
