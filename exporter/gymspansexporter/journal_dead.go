// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

// Reading the journal index of an exporter that is gone (its lock can be
// taken), for recovery (recover.go); the index's format and its writer:
// journal.go.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/internal/eintr"
)

// deadIndex is the index of an exporter that is gone, locked by us.
type deadIndex struct {
	id       string
	lockFD   int
	segments []uint64

	// What its records say (readDeadIndex).
	extents     []extent
	done        uint64
	keys        []dedup.Key // of its K records (an extent's are its lines')
	fingerprint string
	torn        bool // a record was cut short or corrupt: the index ends there
}

// extent is a group's append to the combined file, read back.
type extent struct {
	seq   uint64
	ino   uint64
	off   int64
	lines []lineRef
	keys  []dedup.Key // the keys of the lines' spans, in line order
	roots [][]byte
	// A P record's (combined_spans rest): its spans are the blob of
	// blobLen bytes at off in data file dataN, not lines of the combined file.
	spans   bool
	dataN   uint64
	blobLen int64
	blobCRC uint32
}

// findDeadIndexes returns the indexes in the journal dir whose lock can be
// taken (their exporter is gone), locked.
func findDeadIndexes(dirFD int, own string) ([]*deadIndex, error) {
	names, err := readDirNames(dirFD)
	if err != nil {
		return nil, err
	}
	segs := map[string][]uint64{}
	var locks []string
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, ".lock"); ok && id != own {
			locks = append(locks, id)
			continue
		}
		if base, ok := strings.CutSuffix(n, ".seg"); ok {
			if i := strings.LastIndexByte(base, '-'); i > 0 {
				if num, err := strconv.ParseUint(base[i+1:], 10, 64); err == nil {
					segs[base[:i]] = append(segs[base[:i]], num)
				}
			}
		}
	}
	sort.Strings(locks)
	var out []*deadIndex
	for _, id := range locks {
		fd, err := unix.Openat(dirFD, id+".lock", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // removed meanwhile
		}
		if err := eintr.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			_ = unix.Close(fd) // alive
			continue
		}
		// Another start may have completed and removed it between our open
		// and our lock.
		var st, cur unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Nlink == 0 ||
			unix.Fstatat(dirFD, id+".lock", &cur, unix.AT_SYMLINK_NOFOLLOW) != nil || cur.Ino != st.Ino {
			_ = unix.Close(fd)
			continue
		}
		s := segs[id]
		sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
		out = append(out, &deadIndex{id: id, lockFD: fd, segments: s})
	}
	return out, nil
}

// readDirNames lists a directory given by descriptor.
func readDirNames(dirFD int) ([]string, error) {
	fd, err := unix.Openat(dirFD, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), journalDir)
	defer f.Close()
	return f.Readdirnames(-1)
}

// read parses the dead index's segments.
func (d *deadIndex) read(dirFD int) error {
	for i, n := range d.segments {
		data, err := readFileAt(dirFD, segmentName(d.id, n))
		if err != nil {
			return err
		}
		if !d.parse(data, i == 0) {
			d.torn = true
			return nil // what follows a torn record is not trusted
		}
	}
	return nil
}

// parse reads one segment's records; false when one was torn or corrupt.
func (d *deadIndex) parse(data []byte, first bool) bool {
	header := true
	for len(data) > 0 {
		if len(data) < 8 {
			return false
		}
		n := binary.LittleEndian.Uint32(data)
		sum := binary.LittleEndian.Uint32(data[4:])
		if uint64(n) > uint64(len(data)-8) || n == 0 {
			return false
		}
		p := data[8 : 8+n]
		data = data[8+n:]
		if crc32.Checksum(p, castagnoli) != sum {
			return false
		}
		r := reader{p: p[1:]}
		switch p[0] {
		case recHeader:
			if !header || r.u8() != journalVersion {
				return false
			}
			_ = r.str()
			_ = r.u64()
			fp := r.str()
			if first {
				d.fingerprint = fp
			} else if fp != d.fingerprint {
				return false
			}
			header = false
			continue
		case recExtent:
			x := extent{seq: r.u64(), ino: r.u64(), off: int64(r.u64())}
			nl := r.u32()
			for i := uint32(0); i < nl && r.ok(); i++ {
				x.lines = append(x.lines, lineRef{n: r.u32(), crc: r.u32(), keys: r.u32()})
			}
			x.keys = r.keys(nil)
			nr := r.u32()
			for i := uint32(0); i < nr && r.ok(); i++ {
				x.roots = append(x.roots, r.bytes())
			}
			if !r.ok() {
				return false
			}
			d.extents = append(d.extents, x)
		case recSpans:
			x := extent{spans: true, seq: r.u64(), dataN: r.u64(), off: int64(r.u64()), blobLen: int64(r.u64()), blobCRC: r.u32()}
			x.keys = r.keys(nil)
			nr := r.u32()
			for i := uint32(0); i < nr && r.ok(); i++ {
				x.roots = append(x.roots, r.bytes())
			}
			if !r.ok() || x.off < 0 || x.blobLen < 0 {
				return false
			}
			d.extents = append(d.extents, x)
		case recCancel:
			seq := r.u64()
			d.extents = slices.DeleteFunc(d.extents, func(x extent) bool { return x.seq == seq })
		case recDone:
			d.done = max(d.done, r.u64())
		case recKeys:
			d.keys = r.keys(d.keys)
		default:
			return false
		}
		if header || !r.ok() {
			return false
		}
	}
	return true
}

// remove deletes the dead index (segments first) and gives its lock back.
func (d *deadIndex) remove(dirFD int) error {
	var errs []error
	for _, n := range d.segments {
		for _, name := range []string{dataName(d.id, n), segmentName(d.id, n)} {
			if err := unix.Unlinkat(dirFD, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if err := unix.Unlinkat(dirFD, d.id+".lock", 0); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, err)
		}
	}
	_ = unix.Close(d.lockFD)
	return errors.Join(errs...)
}

// reader decodes a record payload; a read past the end sets bad.
type reader struct {
	p   []byte
	bad bool
}

func (r *reader) ok() bool { return !r.bad }

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.p) {
		r.bad = true
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

func (r *reader) u8() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) bytes() []byte { return r.take(int(r.u32())) }

func (r *reader) str() string { return string(r.bytes()) }

func (r *reader) keys(out []dedup.Key) []dedup.Key {
	n := int(r.u32())
	b := r.take(n * len(dedup.Key{}))
	for i := 0; i < len(b); i += len(dedup.Key{}) {
		out = append(out, dedup.Key(b[i:i+len(dedup.Key{})]))
	}
	return out
}

// readFileAt reads a whole regular file inside dirFD.
func readFileAt(dirFD int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("open %s: %w", name, capturedir.ErrUnsafeFile)
	}
	data := make([]byte, st.Size)
	n, err := f.ReadAt(data, 0)
	if err != nil && n != len(data) {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data[:n], nil
}
