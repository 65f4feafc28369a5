// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package journal is the gymspans exporter's journal index (design §5.1).
// The combined file is the journal: a batch's lines reach it before ConsumeTraces returns, and the rollout files and
// rollouts.jsonl get theirs from memory within flush_interval. After a kill
// -9 the next start completes them from the combined file, and for that it
// must know which lines of the combined file are this exporter's (several
// collectors may append to it) and which of those its rollout files already
// hold. The exporter keeps that in an index of its own, in
// <capture_dir>/.gymspans-journal/:
//
//	<id>.lock          flock(LOCK_EX) for the exporter's life: a lock that can
//	                   be taken is a dead exporter's, whose lines a start completes
//	<id>-<n>.seg       segments of records, oldest first
//
// Every record is framed as [u32 length][u32 CRC-32C][payload], so a record
// torn by a crash is recognized and ends the index there. The records:
//
//	H  segment header: version, id, segment number, the config it was written with
//	E  extent: sequence number, the combined file's inode and the offset of a
//	   group's append, the length and CRC-32C of each line, the dedup key of each
//	   span, and the group's rollouts.jsonl lines
//	D  done: the rollout files and rollouts.jsonl hold every line of the extents
//	   before this sequence number (written each flush tick, after the fsync)
//	K  keys written by an exporter whose index this one completed
//
// An extent is written under the combined file's lock, right before the
// group's writev: if the exporter dies between the two, or in the middle of
// the write, the lines that are not there (or another collector's, appended
// at the same offset later) fail their CRC and are not taken for its own.
// Only lines that are there are completed, and their spans were never
// acknowledged (the push had not returned) nor, with their CRC failing,
// recorded as written.
//
// The service map keeps its own position in service_map.json (per index
// id, in the same rename as the edges it covers; internal/servicemap), so a
// start redoes the edges of exactly the lines after it.
//
// Segments are started at a flush tick once the current one holds a quarter
// of the dedup window's keys, and removed once every extent in them is done
// and in the service map, and the newer segments hold the whole window.
// A clean shutdown removes the index.
package journal // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/internal/eintr"
)

// Dir is the index directory inside the capture dir.
const Dir = ".gymspans-journal"

const journalVersion = 1

// Record types.
const (
	recHeader = 'H'
	recExtent = 'E'
	recDone   = 'D'
	recKeys   = 'K'
	recSpans  = 'P' // combined_spans rest: a group's spans in the segment's data file (spans.go)
	recCancel = 'X' // combined_spans rest: the group of this sequence number was not written
)

// maxRecordBytes bounds a record (a group of a few thousand spans is well
// under 1 MiB; a K record of the whole window is 8 MiB at the default).
const maxRecordBytes = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// LineRef is one line of an extent: its length (newline included), its
// CRC-32C (Checksum), and how many of the extent's dedup keys are its spans'.
type LineRef struct {
	N    uint32
	CRC  uint32
	Keys uint32
}

// Checksum updates crc (0 to start) with b's CRC-32C, the checksum of the
// index's records, lines and blobs.
func Checksum(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// DefaultSegmentBytes is Options.SegmentBytes when it is 0.
const DefaultSegmentBytes = 16 << 20

// Options is what an index is opened with.
type Options struct {
	// Fingerprint is the config its lines depend on besides the journal:
	// another exporter completes a dead index only if it has the same.
	Fingerprint string
	// DirPerm and FilePerm are the permissions of the index's directory and files.
	DirPerm, FilePerm uint32
	// WindowKeys is the dedup window: the newer segments must hold these many
	// keys before an older one goes.
	WindowKeys int
	// WithData: each segment has a data file of span payloads beside it
	// (combined_spans rest, spans.go).
	WithData bool
	// SegmentBytes also ends a segment, however few dedup keys it holds
	// (with dedup_window_spans 0 an extent holds none, and a segment ended by
	// its keys alone would never end, nor be removed); 0 is
	// DefaultSegmentBytes.
	SegmentBytes int64
}

// Index is this exporter's index. Its methods are safe for
// concurrent use: the group writer adds extents, the flusher marks done and
// maintains the segments.
type Index struct {
	dirFD       int
	id          string
	fingerprint string
	filePerm    uint32
	lockFD      int

	mu      sync.Mutex
	seg     indexSegment
	older   []indexSegment
	nextSeq uint64
	done    uint64 // the last done record written
	buf     []byte

	windowKeys int // the newer segments must hold these many keys before an older one goes
	rotateKeys int // a segment holding these many keys is followed by a new one
	maxBytes   int64

	// withData: each segment has a data file of span payloads beside it
	// (combined_spans rest, spans.go); data is the current one's.
	withData bool
	data     dataFile
}

// indexSegment is one segment file.
type indexSegment struct {
	n      uint64
	fd     int
	off    int64
	maxSeq uint64 // of its extents; 0 with none
	keys   int
	// data: its data file exists (combined_spans rest); removed once every
	// extent in it is done and in the service map, before the segment.
	data bool
}

// openJournalDir opens (creating) the index directory inside the capture dir.
func openJournalDir(captureFD int, perm uint32) (int, error) {
	if err := unix.Mkdirat(captureFD, Dir, perm); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("create %s: %w", Dir, err)
	}
	fd, err := unix.Openat(captureFD, Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", Dir, err)
	}
	return fd, nil
}

// Open opens (creating) the index directory inside the capture dir, and
// creates and locks a fresh index in it.
func Open(captureFD int, o Options) (*Index, error) {
	dirFD, err := openJournalDir(captureFD, o.DirPerm)
	if err != nil {
		return nil, err
	}
	return newIndex(dirFD, o)
}

// newIndex creates and locks a fresh index in dirFD, which it owns (closes
// on failure).
func newIndex(dirFD int, o Options) (*Index, error) {
	id, fd, err := lockNew(dirFD, o.FilePerm)
	if err != nil {
		_ = unix.Close(dirFD)
		return nil, err
	}
	j := &Index{
		dirFD: dirFD, id: id, fingerprint: o.Fingerprint, filePerm: o.FilePerm, lockFD: fd,
		nextSeq: 1, windowKeys: o.WindowKeys, rotateKeys: max(o.WindowKeys/4, 4096), withData: o.WithData,
		maxBytes: o.SegmentBytes,
	}
	if j.maxBytes <= 0 {
		j.maxBytes = DefaultSegmentBytes
	}
	j.seg.fd, j.data.fd = -1, -1
	if err := j.startSegmentLocked(0); err != nil {
		_ = j.closeIndex(true) // its directory's descriptor too
		return nil, err
	}
	return j, nil
}

// lockNew creates a new index id's lock file in dirFD and locks it.
func lockNew(dirFD int, filePerm uint32) (string, int, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	id := hex.EncodeToString(raw[:])
	// Lock under a temporary name, then rename: a start scanning the dir
	// never finds our lock file unlocked.
	tmp := id + ".lock.new"
	fd, err := unix.Openat(dirFD, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, filePerm)
	if err != nil {
		return "", -1, fmt.Errorf("create %s/%s: %w", Dir, tmp, err)
	}
	if err := eintr.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(dirFD, tmp, 0)
		return "", -1, fmt.Errorf("lock %s/%s: %w", Dir, tmp, err)
	}
	if err := unix.Renameat(dirFD, tmp, dirFD, id+".lock"); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(dirFD, tmp, 0)
		return "", -1, fmt.Errorf("rename %s/%s: %w", Dir, tmp, err)
	}
	return id, fd, nil
}

// ID names the index (in service_map.json too).
func (j *Index) ID() string { return j.id }

func segmentName(id string, n uint64) string {
	return fmt.Sprintf("%s-%010d.seg", id, n)
}

// startSegmentLocked starts segment n and makes it the current one.
func (j *Index) startSegmentLocked(n uint64) error {
	name := segmentName(j.id, n)
	fd, err := unix.Openat(j.dirFD, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, j.filePerm)
	if err != nil {
		return fmt.Errorf("create %s/%s: %w", Dir, name, err)
	}
	seg := indexSegment{n: n, fd: fd}
	p := []byte{recHeader, journalVersion}
	p = appendString(p, j.id)
	p = binary.LittleEndian.AppendUint64(p, n)
	p = appendString(p, j.fingerprint)
	if err := j.writeRecord(&seg, p); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlinkat(j.dirFD, name, 0)
		return err
	}
	if j.withData {
		// After the segment: a data file is never without the segment
		// that names its extents.
		d, err := j.createData(n)
		if err != nil {
			_ = unix.Close(fd)
			_ = unix.Unlinkat(j.dirFD, name, 0)
			return err
		}
		seg.data = true
		if j.data.fd >= 0 {
			_ = unix.Close(j.data.fd) // never written again
		}
		j.data = d
	}
	if j.seg.fd >= 0 {
		// Never written again: only its name is kept, for its removal.
		_ = unix.Close(j.seg.fd)
		j.seg.fd = -1
		j.older = append(j.older, j.seg)
	}
	j.seg = seg
	return nil
}

// writeRecord frames payload and writes it at the end of seg.
func (j *Index) writeRecord(seg *indexSegment, payload []byte) error {
	if len(payload) > maxRecordBytes {
		return fmt.Errorf("journal index record of %d bytes", len(payload))
	}
	j.buf = binary.LittleEndian.AppendUint32(j.buf[:0], uint32(len(payload)))
	j.buf = binary.LittleEndian.AppendUint32(j.buf, crc32.Checksum(payload, castagnoli))
	iov := [][]byte{j.buf, payload}
	want := len(j.buf) + len(payload)
	n, err := pwritev(seg.fd, iov, seg.off)
	if err == nil && n != want {
		err = fmt.Errorf("short write (%d of %d bytes)", n, want)
	}
	if err != nil {
		// Leave no torn record for the next one to follow.
		_ = unix.Ftruncate(seg.fd, seg.off)
		return fmt.Errorf("write %s/%s: %w", Dir, segmentName(j.id, seg.n), err)
	}
	seg.off += int64(n)
	return nil
}

// pwritev writes iovs at off with pwritev(2), retrying on EINTR and
// short writes.
func pwritev(fd int, iovs [][]byte, off int64) (int, error) {
	total := 0
	for len(iovs) > 0 {
		n, err := unix.Pwritev(fd, iovs, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, nil
		}
		total, off = total+n, off+int64(n)
		for n > 0 && len(iovs) > 0 {
			k := min(n, len(iovs[0]))
			iovs[0], n = iovs[0][k:], n-k
			if len(iovs[0]) == 0 {
				iovs = iovs[1:]
			}
		}
		for len(iovs) > 0 && len(iovs[0]) == 0 {
			iovs = iovs[1:]
		}
	}
	return total, nil
}

// An extent record: AppendExtentHeader, then each line (AppendLineRef),
// AppendCount and the keys, then the rollouts.jsonl lines (AppendRoots).
// The sequence number is filled in by AddExtent.
func AppendExtentHeader(p []byte, ino uint64, off int64, lines int) []byte {
	p = append(p[:0], recExtent)
	p = binary.LittleEndian.AppendUint64(p, 0)
	p = binary.LittleEndian.AppendUint64(p, ino)
	p = binary.LittleEndian.AppendUint64(p, uint64(off))
	return AppendCount(p, lines)
}

// AppendLineRef appends one line of an extent record.
func AppendLineRef(p []byte, l LineRef) []byte {
	p = binary.LittleEndian.AppendUint32(p, l.N)
	p = binary.LittleEndian.AppendUint32(p, l.CRC)
	return binary.LittleEndian.AppendUint32(p, l.Keys)
}

// AppendCount appends a count (of keys, lines, bytes) to a record.
func AppendCount(p []byte, n int) []byte { return binary.LittleEndian.AppendUint32(p, uint32(n)) }

// AppendRoots appends a group's rollouts.jsonl lines, counted, to a record.
func AppendRoots(p []byte, roots [][]byte) []byte {
	p = AppendCount(p, len(roots))
	for _, r := range roots {
		p = append(AppendCount(p, len(r)), r...)
	}
	return p
}

// AddExtent records a group's append (payload from AppendExtentHeader and
// the rest) and returns its sequence number.
func (j *Index) AddExtent(payload []byte, keys int) (uint64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.recordGroup(payload, keys)
}

// recordGroup gives a group's record (P or E) the next sequence number,
// writes it to the current segment and counts its dedup keys there. The
// caller holds j.mu.
func (j *Index) recordGroup(payload []byte, keys int) (uint64, error) {
	seq := j.nextSeq
	j.nextSeq++ // never reused, whether or not the lines make it
	binary.LittleEndian.PutUint64(payload[1:], seq)
	if err := j.writeRecord(&j.seg, payload); err != nil {
		return 0, err
	}
	j.seg.maxSeq = seq
	j.seg.keys += keys
	return seq, nil
}

// MarkDone records that the extents before seq are done. The flusher calls
// it after the fsync of the files it wrote.
func (j *Index) MarkDone(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if seq <= j.done {
		return nil
	}
	p := binary.LittleEndian.AppendUint64([]byte{recDone}, seq)
	if err := j.writeRecord(&j.seg, p); err != nil {
		return err
	}
	j.done = seq
	return nil
}

// AddKeys records keys another exporter wrote (completed at start).
func (j *Index) AddKeys(keys []dedup.Key) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	const chunk = 1 << 16
	for len(keys) > 0 {
		n := min(len(keys), chunk)
		p := binary.LittleEndian.AppendUint32([]byte{recKeys}, uint32(n))
		for _, k := range keys[:n] {
			p = append(p, k[:]...)
		}
		if err := j.writeRecord(&j.seg, p); err != nil {
			return err
		}
		j.seg.keys += n
		keys = keys[n:]
	}
	return nil
}

// Sync fsyncs the current segment (each flush tick, before the files).
func (j *Index) Sync() error {
	j.mu.Lock()
	fd := j.seg.fd
	j.mu.Unlock()
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync journal index: %w", err)
	}
	return nil
}

// Maintain starts a new segment when the current one holds rotateKeys keys
// or Options.SegmentBytes, and removes the older segments no longer needed: every
// extent in them is done and before serviceMap (the service map's committed
// position), and the newer segments hold the whole dedup window.
func (j *Index) Maintain(serviceMap uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var err error
	if j.seg.keys >= j.rotateKeys || j.seg.off >= j.maxBytes || j.data.off >= j.maxBytes {
		err = j.startSegmentLocked(j.seg.n + 1) // on failure the current one goes on
	}
	newer := j.seg.keys
	for _, s := range j.older {
		newer += s.keys
	}
	keep := j.older[:0]
	for i, s := range j.older {
		newer -= s.keys
		settled := s.maxSeq < j.done && s.maxSeq < serviceMap
		if settled && s.data {
			// Its spans are in their files: only its keys may still be needed.
			_ = unix.Unlinkat(j.dirFD, dataName(j.id, s.n), 0)
			j.older[i].data = false
		}
		if len(keep) == 0 && settled && newer >= j.windowKeys {
			_ = unix.Unlinkat(j.dirFD, segmentName(j.id, s.n), 0)
			continue
		}
		keep = append(keep, j.older[i])
	}
	clear(j.older[len(keep):])
	j.older = keep
	return err
}

// Close closes the index's descriptors (its directory's too); with remove,
// the index is deleted first (a clean shutdown: nothing is left to
// complete), segments before the lock file.
func (j *Index) Close(remove bool) error { return j.closeIndex(remove) }

func (j *Index) closeIndex(remove bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	segs := j.older
	if j.seg.fd >= 0 {
		segs = append(segs, j.seg)
	}
	for _, s := range segs {
		if remove {
			if s.data {
				if err := unix.Unlinkat(j.dirFD, dataName(j.id, s.n), 0); err != nil {
					errs = append(errs, err)
				}
			}
			if err := unix.Unlinkat(j.dirFD, segmentName(j.id, s.n), 0); err != nil {
				errs = append(errs, err)
			}
		}
		if s.fd >= 0 {
			_ = unix.Close(s.fd)
		}
	}
	if j.data.fd >= 0 {
		_ = unix.Close(j.data.fd)
	}
	j.older, j.seg.fd, j.data.fd = nil, -1, -1
	if remove && len(errs) == 0 {
		_ = unix.Unlinkat(j.dirFD, j.id+".lock", 0)
	}
	_ = unix.Close(j.lockFD)
	_ = unix.Close(j.dirFD)
	return errors.Join(errs...)
}

func appendString(p []byte, s string) []byte {
	p = binary.LittleEndian.AppendUint32(p, uint32(len(s)))
	return append(p, s...)
}
