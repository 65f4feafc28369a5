// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package recovery is the gymspans exporter's recovery (design §5.1: after
// a kill -9 the next start completes the per-rollout files from the
// combined file). At start, before the first push, every index in the
// journal dir whose lock can be taken is an exporter's that died
// (internal/journal). For each one whose config matches:
//
//	read its segments → find its extents' bytes in the combined file or its
//	rotated backups (by inode, one open at a time) → keep each extent's lines up to the first
//	whose CRC fails (the rest is not its own: a torn write, or another
//	collector's lines at that offset) → for the lines of extents from its
//	done record on: complete each rollout file, then rollouts.jsonl →
//	for the lines from its service-map position on: observe them, flush the
//	service map with its position → fsync → copy its dedup keys into our
//	index → remove it
//
// Completing is idempotent by span key: under the file's lock, the file's
// tail (twice the bytes to write, and 1 MiB more) is read and the lines it
// already holds are left out (the crash may have come during or after the
// flush that wrote them, before its done record; another collector may
// have appended since). rollouts.jsonl is checked the same way by (trace
// id, root span id). A span is completed once per recovery whatever the
// extents say. What cannot be read is logged and counted; an index that
// cannot be completed (a write fails) stays for the next start, and a
// corrupt record ends its index there (what comes before it is completed).
package recovery // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/internal/servicemap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Options is what recovery works over: values, not the exporter's state.
type Options struct {
	Logger *zap.Logger
	// Warn logs a warning, at most one per key and interval.
	Warn func(key, msg string, fields ...zap.Field)
	// Recovered counts the lines completed in files of a kind (RolloutKind,
	// RolloutsKind).
	Recovered func(kind string, lines int)
	// Journal is our journal index: the dead ones are in its dir, and it
	// takes their dedup keys.
	Journal    *journal.Index
	ServiceMap *servicemap.Map // nil when off
	Dedup      *dedup.Window   // nil with dedup_window_spans 0
	// RolloutOf is a span's (run, rollout); Template names its file.
	RolloutOf func(res, span pcommon.Map) (run, rollout string)
	Template  *capturedir.Template
	// OTLP: the files are OTLP/JSON (else console lines); Encode encodes
	// recovered spans as the OTLP/JSON line of a file.
	OTLP   bool
	Encode func(td ptrace.Traces, name string) []byte
	// CombinedFile, RolloutsFile and WindowSpans are the config's
	// combined_file, rollouts_file and dedup_window_spans.
	CombinedFile, RolloutsFile string
	WindowSpans                int
	// RolloutKind and RolloutsKind are the kinds (capturedir.AppendOpts.Kind,
	// Recovered) of a rollout file and of rollouts.jsonl.
	RolloutKind, RolloutsKind string
}

// recoverer completes, at start, the files of the exporters that died
// before they wrote them.
type recoverer struct {
	Options
}

// Run completes the files of every dead exporter's journal index in
// o.Journal's dir, before the first push.
func Run(store *capturedir.Store, o Options) error {
	rec := &recoverer{Options: o}
	return rec.recoverDead(store)
}

// recoverDead completes the files of every dead exporter's journal.
func (rec *recoverer) recoverDead(store *capturedir.Store) error {
	dead, err := rec.Journal.FindDead()
	if err != nil {
		return fmt.Errorf("journal index: %w", err)
	}
	for _, d := range dead {
		if err := rec.recoverIndex(store, d); err != nil {
			rec.Logger.Error("gymspans exporter: the files of an exporter that stopped without writing them could not be completed; the next start tries again",
				zap.String("journal_index", d.ID), zap.Error(err))
			d.Release()
		}
	}
	return nil
}

// recovered is what one recovery completes, per file in journal order.
type recovered struct {
	files   map[string]*recoveredFile
	order   []string
	roots   [][]byte
	sm      []recoveredSpan
	keys    []dedup.Key
	seen    map[dedup.Key]bool // spans already taken (an extent may repeat another's lines)
	lines   int                // verified
	missing int                // lines of extents whose journal file is gone
	lastSeq uint64
	// dead is the index recovered (a P extent's blob is in its data files,
	// recover_spans.go).
	dead *journal.Dead
}

type recoveredFile struct {
	lines [][]byte        // console: the journal lines
	keys  []dedup.Key     // of lines (console) or spans (OTLP, P extents)
	spans []recoveredSpan // OTLP and P extents: the spans, encoded once the tail is read
	size  int
}

// recoveredSpan is a span read back with the resource and scope it was
// written with (an OTLP/JSON rollout file's line is re-encoded from them).
type recoveredSpan struct {
	rs   ptrace.ResourceSpans
	ss   ptrace.ScopeSpans
	span ptrace.Span
}

func (rec *recoverer) recoverIndex(store *capturedir.Store, d *journal.Dead) error {
	if err := d.Read(); err != nil {
		return err
	}
	if d.Foreign() {
		rec.Logger.Warn("gymspans exporter: a stopped exporter's journal index was written with another combined_file, format, path_template, rollouts_file or attribute keys; left for an exporter configured as it was",
			zap.String("journal_index", d.ID))
		d.Release()
		return nil
	}
	smFrom := ^uint64(0)
	if rec.ServiceMap != nil {
		p, ok, err := rec.ServiceMap.Position(d.ID)
		if err != nil {
			return err
		}
		smFrom = 0
		if ok {
			smFrom = p
		}
	}
	names, err := rec.journalFiles(store)
	if err != nil {
		return err
	}
	journals := &journalReader{store: store, names: names}
	rc := &recovered{files: map[string]*recoveredFile{}, seen: map[dedup.Key]bool{}, keys: d.Keys, dead: d}
	for _, x := range d.Extents {
		if x.Spans {
			rec.readSpansExtent(rc, x, d.Done, smFrom)
			continue
		}
		if err := rec.readExtent(rc, journals, x, d.Done, smFrom); err != nil {
			journals.close()
			return err
		}
	}
	journals.close()
	if err := rec.completeFiles(store, rc); err != nil {
		return err
	}
	if rec.ServiceMap != nil && len(rc.sm) > 0 {
		rec.ServiceMap.ObserveAt(d.ID, rc.lastSeq+1, func(yield func(pcommon.Resource, ptrace.Span) bool) {
			for _, s := range rc.sm {
				if !yield(s.rs.Resource(), s.span) {
					return
				}
			}
		})
		if err := rec.ServiceMap.Flush(); err != nil {
			return err
		}
	}
	if err := store.Flush(); err != nil {
		return err
	}
	if rec.Dedup != nil && len(rc.keys) > 0 {
		if n := rec.WindowSpans; len(rc.keys) > n {
			rc.keys = rc.keys[len(rc.keys)-n:]
		}
		rec.Dedup.Remember(rc.keys)
		if err := rec.Journal.AddKeys(rc.keys); err != nil {
			return err
		}
		if err := rec.Journal.Sync(); err != nil {
			return err
		}
	}
	if err := d.Remove(); err != nil {
		rec.Logger.Warn("gymspans exporter: removing a completed journal index failed", zap.String("journal_index", d.ID), zap.Error(err))
	}
	if rec.ServiceMap != nil {
		rec.ServiceMap.Forget(d.ID)
	}
	if rc.missing > 0 {
		rec.Logger.Error("gymspans exporter: lines of a stopped exporter are in no combined file any more (rotated away: raise rotation.max_backups); its rollout files lack them",
			zap.String("journal_index", d.ID), zap.Int("lines", rc.missing))
	}
	rec.Logger.Info("gymspans exporter: completed the files of an exporter that stopped before writing them",
		zap.String("journal_index", d.ID), zap.Int("extents", len(d.Extents)), zap.Int("lines_read", rc.lines),
		zap.Int("rollout_files", len(rc.order)), zap.Int("rollouts_lines", len(rc.roots)), zap.Int("service_map_spans", len(rc.sm)),
		zap.Bool("torn_index", d.Torn))
	return nil
}

// journalFiles names the combined file and its rotated backups by inode.
func (rec *recoverer) journalFiles(store *capturedir.Store) (map[uint64]string, error) {
	names, err := capturedir.ReadDirNames(store.DirFD(), ".")
	if err != nil {
		return nil, fmt.Errorf("list capture dir: %w", err)
	}
	out := map[uint64]string{}
	for _, n := range names {
		if n != rec.CombinedFile && !capturedir.IsBackupName(rec.CombinedFile, n) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(store.DirFD(), n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		out[st.Ino] = n
	}
	return out, nil
}

// journalReader reads the extents' lines from the combined file and its
// backups with one descriptor at a time, reserved in the store within
// max_open_files (the extents come in journal order, so a file is opened
// about once).
type journalReader struct {
	store *capturedir.Store
	names map[uint64]string
	ino   uint64
	f     *os.File
}

// file returns the open journal file of inode ino, nil when there is none.
func (r *journalReader) file(ino uint64) *os.File {
	if r.f != nil && r.ino == ino {
		return r.f
	}
	r.close()
	n, ok := r.names[ino]
	if !ok {
		return nil
	}
	f, err := r.store.OpenRead(n)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Ino != ino {
		r.store.CloseRead(f) // renamed since it was listed
		return nil
	}
	r.f, r.ino = f, ino
	return r.f
}

// close gives back the reader's descriptor.
func (r *journalReader) close() {
	if r.f == nil {
		return
	}
	r.store.CloseRead(r.f)
	r.f = nil
}

// readExtent reads x's lines from the journal and takes what recovery needs
// of them.
func (rec *recoverer) readExtent(rc *recovered, journals *journalReader, x journal.Extent, done, smFrom uint64) error {
	total := 0
	for _, l := range x.Lines {
		total += int(l.N)
	}
	f := journals.file(x.Ino)
	if f == nil {
		if x.Seq >= done || x.Seq >= smFrom {
			rc.missing += len(x.Lines)
		}
		return nil
	}
	data := make([]byte, total)
	n, _ := f.ReadAt(data, x.Off)
	data = data[:n]
	keyAt := 0
	for _, l := range x.Lines {
		if int(l.N) > len(data) || !crcMatches(data[:l.N], l.CRC) {
			break // not ours from here on
		}
		line := data[:l.N]
		data = data[l.N:]
		keys := x.Keys[min(keyAt, len(x.Keys)):min(keyAt+int(l.Keys), len(x.Keys))]
		keyAt += int(l.Keys)
		rc.lines++
		rc.keys = append(rc.keys, keys...)
		if x.Seq < done && x.Seq < smFrom {
			continue
		}
		td, err := decodeLine(rec.OTLP, line)
		if err != nil {
			rec.Warn("recover_decode", "a line of the combined file could not be read back", zap.Error(err))
			continue
		}
		rec.takeLine(rc, x, line, td, nil, done, smFrom)
	}
	return nil
}

func crcMatches(line []byte, crc uint32) bool {
	return len(line) > 0 && line[len(line)-1] == '\n' && journal.Checksum(0, line) == crc
}

// takeLine routes one recovered line's spans to their rollout files and the
// service map, and keeps the extent's roots whose span it holds. With line
// nil (a P extent's batch) the spans are re-encoded, and only those wrote
// says (by their order in td) are taken.
func (rec *recoverer) takeLine(rc *recovered, x journal.Extent, line []byte, td ptrace.Traces, wrote []bool, done, smFrom uint64) {
	var ids map[string]bool
	at := -1
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				if at++; wrote != nil && !wrote[at] {
					continue
				}
				key := dedup.KeyOf(span)
				if rc.seen[key] {
					continue
				}
				rc.seen[key] = true
				rc.lastSeq = max(rc.lastSeq, x.Seq)
				if x.Seq >= smFrom {
					rc.sm = append(rc.sm, recoveredSpan{rs, ss, span})
				}
				if x.Seq < done {
					continue
				}
				if ids == nil {
					ids = map[string]bool{}
				}
				tid, sid := span.TraceID(), span.SpanID()
				ids[hex.EncodeToString(tid[:])+"/"+hex.EncodeToString(sid[:])] = true
				run, rollout := rec.RolloutOf(rs.Resource().Attributes(), span.Attributes())
				if rollout == "" {
					continue
				}
				name, reason := rec.Template.Render(run, rollout)
				if reason != "" {
					continue
				}
				rf := rc.files[name]
				if rf == nil {
					rf = &recoveredFile{}
					rc.files[name] = rf
					rc.order = append(rc.order, name)
				}
				rf.keys = append(rf.keys, key)
				if rec.OTLP || line == nil {
					rf.spans = append(rf.spans, recoveredSpan{rs, ss, span})
				} else {
					rf.lines = append(rf.lines, line)
					rf.size += len(line)
				}
			}
		}
	}
	for _, r := range x.Roots {
		if k, ok := rootKey(r); ok && ids[k] {
			rc.roots = append(rc.roots, r)
			delete(ids, k) // once
		}
	}
}

// completeFiles appends to each rollout file, then rollouts.jsonl, what
// they lack of rc.
func (rec *recoverer) completeFiles(store *capturedir.Store, rc *recovered) error {
	var errs []error
	lines := 0
	for _, name := range rc.order {
		rf := rc.files[name]
		n, err := rec.completeFile(store, name, rf)
		if errors.Is(err, capturedir.ErrUnsafeFile) {
			continue // never written through; the spans are in the combined file
		}
		if err != nil {
			errs = append(errs, err)
		}
		lines += n
	}
	rec.Recovered(rec.RolloutKind, lines)
	if len(rc.roots) > 0 && rec.RolloutsFile != "" {
		n, err := rec.completeRoots(store, rc.roots)
		if err != nil {
			errs = append(errs, err)
		}
		rec.Recovered(rec.RolloutsKind, n)
	}
	return errors.Join(errs...)
}

// completeFile appends the lines of rf that name's tail lacks.
func (rec *recoverer) completeFile(store *capturedir.Store, name string, rf *recoveredFile) (int, error) {
	written := 0
	size := rf.size
	if len(rf.spans) > 0 {
		size = 2048 * len(rf.spans) // an estimate of the bytes, for the tail read
	}
	prepare := func(fd int, fileSize int64) ([][]byte, int, error) {
		have := map[dedup.Key]bool{}
		err := eachTailLine(fd, fileSize, 2*int64(size)+1<<20, func(line []byte) {
			for _, k := range lineKeys(rec.OTLP, line, nil) {
				have[k] = true
			}
		})
		if err != nil {
			return nil, 0, err
		}
		if len(rf.spans) == 0 {
			var out [][]byte
			n := 0
			for i, l := range rf.lines {
				if !have[rf.keys[i]] {
					out = append(out, l)
					n += len(l)
				}
			}
			written = len(out)
			return out, n, nil
		}
		td := ptrace.NewTraces()
		for i, s := range rf.spans {
			if have[rf.keys[i]] {
				continue
			}
			rs := td.ResourceSpans().AppendEmpty()
			s.rs.Resource().CopyTo(rs.Resource())
			rs.SetSchemaUrl(s.rs.SchemaUrl())
			ss := rs.ScopeSpans().AppendEmpty()
			s.ss.Scope().CopyTo(ss.Scope())
			ss.SetSchemaUrl(s.ss.SchemaUrl())
			s.span.CopyTo(ss.Spans().AppendEmpty())
			written++
		}
		if written == 0 {
			return nil, 0, nil
		}
		line := rec.Encode(td, name)
		return [][]byte{line}, len(line), nil
	}
	err := store.Append(name, nil, 0, capturedir.AppendOpts{Kind: rec.RolloutKind, Prepare: prepare})
	return written, err
}

// completeRoots appends the rollouts.jsonl lines its tail lacks.
func (rec *recoverer) completeRoots(store *capturedir.Store, roots [][]byte) (int, error) {
	size, written := 0, 0
	for _, r := range roots {
		size += len(r)
	}
	prepare := func(fd int, fileSize int64) ([][]byte, int, error) {
		have := map[string]bool{}
		err := eachTailLine(fd, fileSize, 2*int64(size)+1<<20, func(line []byte) {
			if k, ok := rootKey(line); ok {
				have[k] = true
			}
		})
		if err != nil {
			return nil, 0, err
		}
		var out [][]byte
		n := 0
		for _, r := range roots {
			if k, ok := rootKey(r); ok && !have[k] {
				have[k] = true
				out = append(out, r)
				n += len(r)
			}
		}
		written = len(out)
		return out, n, nil
	}
	err := store.Append(rec.RolloutsFile, nil, 0, capturedir.AppendOpts{Kind: rec.RolloutsKind, Prepare: prepare})
	return written, err
}

// eachTailLine calls f with each whole line of the last window bytes of a
// file of size bytes (the first, cut by the window, is skipped).
func eachTailLine(fd int, size, window int64, f func(line []byte)) error {
	start := max(size-window, 0)
	data := make([]byte, size-start)
	for off := 0; off < len(data); {
		n, err := unix.Pread(fd, data[off:], start+int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("read tail: %w", err)
		}
		if n == 0 {
			data = data[:off]
			break
		}
		off += n
	}
	if start > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil // a torn last line was cut before prepare
		}
		f(data[:i+1])
		data = data[i+1:]
	}
	return nil
}
