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

	"bytes"
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// errUnsafeFile marks a name that exists in the capture dir as something we
// must not write through: a symlink, a non-regular file, or a hard link.
var errUnsafeFile = errors.New("not a regular single-link file")

// sysWrite is the writev(2) seam (at most iovMax buffers); tests replace
// it to inject ENOSPC and short writes for one file.
type sysWrite func(name string, fd int, iovs [][]byte) (int, error)

// iovMax is Linux's IOV_MAX.
const iovMax = 1024

// maxWriteBytes bounds the bytes of one write(2). On the benchmark VM a
// single write of 4 MB or more copied into the page cache several times
// slower than writes of 1 to 3 MB (bench/RESULTS.md), and group commit
// makes the combined file's append that large as soon as a few pushes are
// written together.
const maxWriteBytes = 1 << 20

// writeChunks cuts an append's buffers into the chunks of successive
// write(2) calls: at most iovMax buffers and maxWriteBytes bytes each, a
// longer buffer split across chunks. It does not modify data.
type writeChunks struct {
	data    [][]byte
	left    int      // the bytes of data not handed out yet
	off     int      // into data[0]
	scratch [][]byte // the chunk, when it is not a prefix of data
}

// next returns the next chunk and its size, or nil when data is done.
func (w *writeChunks) next() ([][]byte, int) {
	if len(w.data) == 0 {
		return nil, 0
	}
	// The common case: what is left fits one write as it is.
	if w.off == 0 && len(w.data) <= iovMax && w.left <= maxWriteBytes {
		chunk, n := w.data, w.left
		w.data, w.left = nil, 0
		return chunk, n
	}
	w.scratch = w.scratch[:0]
	n := 0
	for len(w.data) > 0 && len(w.scratch) < iovMax && n < maxWriteBytes {
		b := w.data[0][w.off:]
		if room := maxWriteBytes - n; len(b) > room {
			b = b[:room]
			w.off += room
		} else {
			w.data, w.off = w.data[1:], 0
		}
		w.scratch = append(w.scratch, b)
		n += len(b)
	}
	w.left -= n
	return w.scratch, n
}

// defaultWrite is writev(2) with the iovecs on the stack. Not unix.Writev:
// that heap-allocates its iovec slice whenever a call has more than 8
// buffers, as an OTLP/JSON file's append usually has (see allocs/op of
// BenchmarkExport/gymspans_otlp_json), and hands EINTR back.
func defaultWrite(_ string, fd int, iovs [][]byte) (int, error) {
	var scratch [iovMax]unix.Iovec
	vec := scratch[:0]
	for _, b := range iovs {
		if len(b) == 0 {
			continue
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		vec = append(vec, v)
	}
	if len(vec) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&vec[0])), uintptr(len(vec)))
		runtime.KeepAlive(iovs)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

// rotation bounds one file by size with a bounded number of backups.
type rotation struct {
	maxBytes   int64
	maxBackups int
}

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
	// locked: the store keeps the file's lock between appends (lockhold.go);
	// lockSeq tells this lock from earlier ones of the handle.
	locked  bool
	lockSeq uint64
}

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
	opened  *bounded.Ring[string, struct{}] // names opened before (openAt)
	lru     *list.List                      // front = most recently used
	open    int                             // descriptors held (handles, retired handles, flusher reopens)
	// closedDirty names files closed (evicted) or renamed (rotated) before
	// their last write was fsynced; dirDirty marks a rename not yet fsynced.
	closedDirty map[string]struct{}
	dirDirty    bool
	closed      bool
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
	rotated(name string)
	openFilesChanged(delta int)
	fsyncFailed(name string, err error)
	opened(kind string, created bool)
	locked(kind string)
	appended(kind string)
}

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
		opened:      bounded.NewRing[string, struct{}](maxOpenedNames),
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
		s.opened.Put(name, struct{}{})
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

// reserveLocked makes room for one more descriptor, evicting the least
// recently used idle handle or waiting for one to become idle.
func (s *fileStore) reserveLocked() {
	for s.open >= s.capacity {
		if !s.evictLocked() {
			s.cond.Wait()
		}
	}
	s.open++
	s.obs.openFilesChanged(1)
}

func (s *fileStore) unreserveLocked() {
	s.open--
	s.obs.openFilesChanged(-1)
	s.cond.Broadcast()
}

func (s *fileStore) evictLocked() bool {
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
func (s *fileStore) dropLocked(h *handle) {
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
func (s *fileStore) closeLocked(h *handle) {
	_ = unix.Close(h.fd)
	h.locked = false
	s.unreserveLocked()
}

// acquire returns the cached handle of name, opening it when needed.
func (s *fileStore) acquire(name, kind string) (*handle, error) {
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
	s.obs.opened(kind, created)
	h := &handle{name: name, fd: fd, refs: 1, ourEnd: -1, created: created}
	h.elem = s.lru.PushFront(h)
	s.handles[name] = h
	return h, nil
}

// retire closes name's handle once it is idle (now, if it is): a rollout
// whose root was written is done, and its descriptor is better spent on
// one in flight than left to the least-recently-used order.
func (s *fileStore) retire(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.handles[name]; h != nil {
		s.dropLocked(h)
	}
}

func (s *fileStore) release(h *handle) {
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
func (s *fileStore) reopen(h *handle, kind string) (*handle, error) {
	s.mu.Lock()
	if !h.retired {
		s.dropLocked(h)
	}
	s.mu.Unlock()
	s.release(h)
	return s.acquire(h.name, kind)
}

// syncfs is syncfs(2), retried on EINTR.
func syncfs(fd int) error {
	for {
		err := unix.Syncfs(fd)
		if err != unix.EINTR {
			return err
		}
	}
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

// backupLayout is "<stem>-<UTC time>.<ext>" for "<stem>.<ext>".
const backupTimeLayout = "2006-01-02T15-04-05.000000000"

func backupParts(name string) (stem, ext string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i], name[i:]
	}
	return name, ""
}

// isBackupName reports whether n is a rotated backup of name.
func isBackupName(name, n string) bool {
	stem, ext := backupParts(name)
	if len(n) <= len(stem)+1+len(ext) || !strings.HasPrefix(n, stem+"-") || !strings.HasSuffix(n, ext) {
		return false
	}
	_, err := time.Parse(backupTimeLayout, n[len(stem)+1:len(n)-len(ext)])
	return err == nil
}

// rotate renames the locked file h to a timestamped backup, leaves it and
// the dir to the next flush, and prunes old backups. Called under h's lock,
// so rotators of the same file are serialized across processes.
func (s *fileStore) rotate(h *handle, rot *rotation) error {
	stem, ext := backupParts(h.name)
	now := time.Now().UTC()
	var backup string
	for i := 0; ; i++ {
		backup = stem + "-" + now.Add(time.Duration(i)).Format(backupTimeLayout) + ext
		var st unix.Stat_t
		if err := unix.Fstatat(s.dirFD, backup, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			break
		}
		if i > 1000 {
			return fmt.Errorf("rotate %q: no free backup name", h.name)
		}
	}
	if err := unix.Renameat(s.dirFD, h.name, s.dirFD, backup); err != nil {
		return fmt.Errorf("rotate %q: %w", h.name, err)
	}
	s.createEmpty(h.name)
	s.mu.Lock()
	// Always: the backup may also hold the writes of an earlier handle of
	// the name that was evicted before its fsync.
	h.dirty = false
	s.closedDirty[backup] = struct{}{}
	s.dirDirty = true
	s.mu.Unlock()
	s.obs.rotated(h.name)
	s.pruneBackups(h.name, rot.maxBackups)
	return nil
}

// createEmpty creates name, empty, right after a rotation renamed it away
// (still under the old file's lock), so a reader following the name (tail
// -F) finds the new file at once, not at the next append. Best effort: the
// next append creates it when this fails, and one that exists already
// (another process created it) is left as it is.
func (s *fileStore) createEmpty(name string) {
	fd, err := unix.Openat(s.dirFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, s.filePerm)
	if err != nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && st.Mode&0o777 != s.filePerm {
		_ = unix.Fchmod(fd, s.filePerm)
	}
	_ = unix.Close(fd)
}

// pruneBackups keeps the newest keep backups of name (0 keeps none).
func (s *fileStore) pruneBackups(name string, keep int) {
	entries, err := os.ReadDir(s.dirPath)
	if err != nil {
		return
	}
	var backups []string
	for _, e := range entries {
		n := e.Name()
		if isBackupName(name, n) {
			backups = append(backups, n)
		}
	}
	if len(backups) <= keep {
		return
	}
	sort.Strings(backups) // the time layout sorts lexically
	for _, n := range backups[:len(backups)-keep] {
		_ = unix.Unlinkat(s.dirFD, n, 0)
	}
}

// syncfsThreshold is the number of files to sync in one flush above which
// one syncfs(2) is cheaper than an fsync (and, for evicted files, an open
// and a close) per file.
const syncfsThreshold = 16

// flush fsyncs every file written since the last flush: cached dirty
// handles one at a time (so at most one is pinned by the flusher), then the
// files evicted or rotated while dirty, reopened read-only within the
// descriptor bound, then the dir after a rotation; or, above
// syncfsThreshold files, the whole filesystem at once.
func (s *fileStore) flush() error {
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
			s.obs.fsyncFailed(s.dirPath, err)
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
			s.obs.fsyncFailed(n, err)
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
			s.obs.fsyncFailed(n, err)
			errs = append(errs, err)
		}
	}
	if dirDirty {
		if err := unix.Fsync(s.dirFD); err != nil {
			s.obs.fsyncFailed(s.dirPath, err)
			errs = append(errs, fmt.Errorf("fsync %q: %w", s.dirPath, err))
		}
	}
	return errors.Join(errs...)
}

func (s *fileStore) fsyncByName(n string) error {
	// Descriptors inside the dir are only opened and closed under s.mu, so
	// the bound holds at every instant.
	s.mu.Lock()
	s.reserveLocked()
	fd, err := unix.Openat(s.dirFD, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		s.unreserveLocked()
		s.mu.Unlock()
		if errors.Is(err, unix.ENOENT) {
			return nil // rotated or removed; rotation fsynced it
		}
		return fmt.Errorf("reopen %q for fsync: %w", n, err)
	}
	s.mu.Unlock()
	serr := unix.Fsync(fd)
	s.mu.Lock()
	_ = unix.Close(fd)
	s.unreserveLocked()
	s.mu.Unlock()
	if serr != nil {
		return fmt.Errorf("fsync %q: %w", n, serr)
	}
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
