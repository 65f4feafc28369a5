// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package journal // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"

// Reading the journal index of an exporter that is gone (its lock can be
// taken), for the recovery at the next start; the index's format and its
// writer: journal.go.

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

// Dead is the index of an exporter that is gone, locked by us. Read
// fills in what its records say; then Remove it once its lines are
// completed, or Release it for the next start.
type Dead struct {
	ID       string
	dirFD    int
	lockFD   int
	segments []uint64
	own      string // the fingerprint of the index that found it

	// What its records say (Read).
	Extents     []Extent
	Done        uint64      // the extents before this sequence number are in their files
	Keys        []dedup.Key // of its K records (an extent's are its lines')
	fingerprint string
	Torn        bool // a record was cut short or corrupt: the index ends there

	blobs blobReader
}

// Extent is a group's append to the combined file, read back: the
// combined file's inode and the offset of the append, its lines, the keys
// of the lines' spans in line order, and the group's rollouts.jsonl lines.
type Extent struct {
	Seq   uint64
	Ino   uint64
	Off   int64
	Lines []LineRef
	Keys  []dedup.Key
	Roots [][]byte
	// Spans: a P record's (combined_spans rest): its spans are the blob of
	// blobLen bytes at Off in data file dataN, not lines of the combined
	// file (Dead.Blob).
	Spans   bool
	dataN   uint64
	blobLen int64
	blobCRC uint32
}

// FindDead returns the indexes in j's dir whose lock can be taken (their
// exporter is gone), locked.
func (j *Index) FindDead() ([]*Dead, error) {
	dead, err := findDeadIndexes(j.dirFD, j.id)
	for _, d := range dead {
		d.dirFD, d.own = j.dirFD, j.fingerprint
	}
	return dead, err
}

// findDeadIndexes returns the indexes in the journal dir whose lock can be
// taken (their exporter is gone), locked.
func findDeadIndexes(dirFD int, own string) ([]*Dead, error) {
	names, err := capturedir.ReadDirNames(dirFD, Dir)
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
	var out []*Dead
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
		out = append(out, &Dead{ID: id, lockFD: fd, segments: s})
	}
	return out, nil
}

// Read parses the dead index's segments.
func (d *Dead) Read() error {
	for i, n := range d.segments {
		data, err := readFileAt(d.dirFD, segmentName(d.ID, n))
		if err != nil {
			return err
		}
		if !d.parse(data, i == 0) {
			d.Torn = true
			return nil // what follows a torn record is not trusted
		}
	}
	return nil
}

// parse reads one segment's records; false when one was torn or corrupt.
func (d *Dead) parse(data []byte, first bool) bool {
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
			x := Extent{Seq: r.u64(), Ino: r.u64(), Off: int64(r.u64())}
			nl := r.u32()
			for i := uint32(0); i < nl && r.ok(); i++ {
				x.Lines = append(x.Lines, LineRef{N: r.u32(), CRC: r.u32(), Keys: r.u32()})
			}
			x.Keys = r.keys(nil)
			nr := r.u32()
			for i := uint32(0); i < nr && r.ok(); i++ {
				x.Roots = append(x.Roots, r.bytes())
			}
			if !r.ok() {
				return false
			}
			d.Extents = append(d.Extents, x)
		case recSpans:
			x := Extent{Spans: true, Seq: r.u64(), dataN: r.u64(), Off: int64(r.u64()), blobLen: int64(r.u64()), blobCRC: r.u32()}
			x.Keys = r.keys(nil)
			nr := r.u32()
			for i := uint32(0); i < nr && r.ok(); i++ {
				x.Roots = append(x.Roots, r.bytes())
			}
			if !r.ok() || x.Off < 0 || x.blobLen < 0 {
				return false
			}
			d.Extents = append(d.Extents, x)
		case recCancel:
			seq := r.u64()
			d.Extents = slices.DeleteFunc(d.Extents, func(x Extent) bool { return x.Seq == seq })
		case recDone:
			d.Done = max(d.Done, r.u64())
		case recKeys:
			d.Keys = r.keys(d.Keys)
		default:
			return false
		}
		if header || !r.ok() {
			return false
		}
	}
	return true
}

// Foreign reports whether the dead index was written with another
// Options.Fingerprint than the index that found it (after Read): it is left
// for an exporter configured as it was.
func (d *Dead) Foreign() bool { return d.fingerprint != d.own }

// Release gives the dead index's lock back, leaving it for the next start.
func (d *Dead) Release() { _ = unix.Close(d.lockFD) }

// Remove deletes the dead index (segments first) and gives its lock back.
func (d *Dead) Remove() error {
	dirFD := d.dirFD
	var errs []error
	for _, n := range d.segments {
		for _, name := range []string{dataName(d.ID, n), segmentName(d.ID, n)} {
			if err := unix.Unlinkat(dirFD, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if err := unix.Unlinkat(dirFD, d.ID+".lock", 0); err != nil && !errors.Is(err, unix.ENOENT) {
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
