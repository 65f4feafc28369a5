// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"

	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// ErrUnsafeFile marks a name that exists in the capture dir as something we
// must not write through: a symlink, a non-regular file, or a hard link.
var ErrUnsafeFile = errors.New("not a regular single-link file")

// Store owns the capture-dir descriptor and the bounded handle cache.
type Store struct {
	dirPath  string
	dirFD    int
	filePerm uint32
	capacity int // handles plus flusher reopens; the dir fd is not included
	write    WriteFunc
	obs      Observer

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

	pruner pruner // removes old backups after a rotation (prune.go)
}

// Observer receives the file layer's events for the exporter's metrics.
// kind is the AppendOpts Kind of the file.
type Observer interface {
	TornTailCut(name string)
	TailRead(name string)
	Statted(kind string)
	Rotated(name string)
	OpenFilesChanged(delta int)
	FsyncFailed(name string, err error)
	Opened(kind string, created bool)
	Locked(kind string)
	Appended(kind string)
}

// Options say how Open sets up a Store.
type Options struct {
	FilePerm os.FileMode
	// MaxOpenFiles bounds the descriptors inside the dir, the dir's own
	// included.
	MaxOpenFiles int
	Observer     Observer
	// Shared is shared_capture_dir: nil decides by the dir's filesystem
	// (shared on network filesystems). Not shared, appends take no lock.
	Shared *bool
	// Write replaces writev(2) (tests inject failures); nil is Writev.
	Write WriteFunc
	// SyncfsAbove is the number of files to sync above which a flush makes
	// one syncfs(2) instead; 0 is syncfsThreshold.
	SyncfsAbove int
	Logger      *zap.Logger
}

// Open opens the capture dir dir (which exists) for appending.
func Open(dir string, o Options) (*Store, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open capture dir %q: %w", dir, err)
	}
	s := &Store{
		dirPath:     dir,
		dirFD:       fd,
		filePerm:    uint32(o.FilePerm.Perm()),
		capacity:    o.MaxOpenFiles - 1,
		write:       o.Write,
		obs:         o.Observer,
		handles:     map[string]*handle{},
		opened:      bounded.NewRing[string, tailMark](maxOpenedNames),
		lru:         list.New(),
		closedDirty: map[string]struct{}{},
		syncfsAbove: o.SyncfsAbove,
	}
	if s.write == nil {
		s.write = Writev
	}
	if s.syncfsAbove == 0 {
		s.syncfsAbove = syncfsThreshold
	}
	s.cond = sync.NewCond(&s.mu)
	s.pruner.prune, s.pruner.idle.L = s.pruneBackups, &s.pruner.mu
	shared, err := sharedCaptureDir(o.Shared, fd)
	if err != nil {
		o.Logger.Warn("gymspans: taken as shared (every append locks)", zap.Error(err))
	}
	s.alone = !shared
	return s, nil
}

// DirFD is the capture dir's descriptor, open until Close.
func (s *Store) DirFD() int { return s.dirFD }

// FilePerm is the permission bits files are created with.
func (s *Store) FilePerm() uint32 { return s.filePerm }

// ReadDirNames lists the directory of dirFD (the capture dir, or one inside
// it), called name in errors.
func ReadDirNames(dirFD int, name string) ([]string, error) {
	fd, err := unix.Openat(dirFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Readdirnames(-1)
}

// openAt opens name inside the capture dir for appending, creating it with
// the configured permissions when it does not exist. A name this store
// opened before (a rollout's file reopened after its handle was evicted)
// takes one openat; a name it never opened (usually a new rollout's file) is
// created first, also one openat when it does not exist (two: an open that
// failed with ENOENT, then the create, was what every new rollout cost, and
// on NFS every open is a round trip). The first append checks what was
// opened (checkOpened).
func (s *Store) openAt(name string) (fd int, created bool, err error) {
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
// through is ErrUnsafeFile.
func openError(name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("open %q: %w (%w)", name, ErrUnsafeFile, err)
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
func (s *Store) checkOpened(h *handle, st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return fmt.Errorf("open %q: %w", h.name, ErrUnsafeFile)
	}
	if h.created && permissions(st) != s.filePerm {
		_ = unix.Fchmod(h.fd, s.filePerm) // best effort
	}
	h.checked = true
	return nil
}

// permissions are st's permission bits (Stat_t.Mode is narrower on darwin).
func permissions(st *unix.Stat_t) uint32 {
	return uint32(st.Mode) & 0o777 //nolint:unconvert // uint16 on darwin
}

// Close fsyncs and closes every handle and the capture-dir descriptor.
func (s *Store) Close() error {
	err := s.Flush()
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
	s.pruner.stop() // it unlinks through the dir descriptor
	_ = unix.Fsync(s.dirFD)
	if cerr := unix.Close(s.dirFD); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// Abandon drops the store as a process killed (kill -9) would: every
// descriptor closed (their locks given back), nothing fsynced or flushed.
// For crash tests.
func (s *Store) Abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.handles {
		_ = unix.Close(h.fd)
	}
	s.handles = map[string]*handle{}
	s.closed = true
	if s.holdTimer != nil {
		s.holdTimer.Stop()
	}
	s.pruner.stop()
	_ = unix.Close(s.dirFD)
}

// Steady runs f while the store opens and closes no descriptor inside the
// dir (tests count them).
func (s *Store) Steady(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}
