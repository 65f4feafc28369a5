// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package servicemap keeps <capture_dir>/service_map.json and
// service_map.md (design §5.1): the service-map edges seen per run, with
// calls, errors and latency quantiles from a mergeable sketch.
//
//	Observe(edge) → the writer's delta (bounded) → Flush: under flock, read
//	the file, add the delta, replace the JSON and the Markdown by rename →
//	clear the delta
//
// Each writer holds in memory only what it saw since its last flush, and
// adds it to what is on disk under an exclusive lock, so several collectors
// sharing a capture dir merge instead of overwriting, a restart keeps every
// edge (its delta is empty, the disk has the rest), and nothing is counted
// twice: a delta is dropped from memory exactly when the rename of the JSON
// file that holds it succeeds. Sketches merge exactly (see Sketch), so the
// quantiles on disk are those of all calls, whoever saw them.
package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Options configure a Map. The zero value of every field means its default.
type Options struct {
	// JSONFile is the edge table's file name inside the directory.
	// Default: "service_map.json". The lock file is ".<name without .json>.lock".
	JSONFile string
	// MarkdownFile is the Mermaid drawing's file name. Default: "service_map.md".
	MarkdownFile string
	// FileMode is the permission of created files (before umask). Default: 0640.
	FileMode os.FileMode
	// MaxEdges bounds the edges held in memory, counting those of a flush
	// in progress. A new edge at the bound flushes early (or waits for the
	// flush in progress); if that fails it is dropped (counted in
	// Stats.Dropped). Default: 10,000.
	MaxEdges int
	// MaxAddresses bounds the host:port → service entries learned from
	// SERVER spans (per run), and those kept in the JSON file. A new
	// address beyond it is ignored (Stats.AddressesIgnored): calls to it
	// keep their host:port edge. Default: DefaultMaxAddresses (4096).
	MaxAddresses int
	// RelativeAccuracy is the latency sketch's bound on the relative error
	// of every quantile, in [MinRelativeAccuracy, 1). Default: 0.01.
	RelativeAccuracy float64
	// MaxBins bounds each sketch's buckets (8 bytes each). Default:
	// BinsFor(RelativeAccuracy, DefaultDynamicRange), 1038 at 1%.
	MaxBins int
	// ServiceAttributes and RunAttribute are what ObserveSpan reads; see
	// EdgeFromSpan. Defaults: DefaultServiceAttributes, DefaultRunAttribute.
	ServiceAttributes []string
	RunAttribute      string
	// Logger receives corrupt-file warnings and (rate-limited) drops. Default: no-op.
	Logger *zap.Logger

	now func() time.Time // tests; default time.Now
}

// Stats are counters for the exporter's own telemetry.
type Stats struct {
	Edges            int    // edges held in memory, not yet in the file
	Flushes          uint64 // flushes that replaced service_map.json
	FlushErrors      uint64 // flushes that failed (their delta was kept, unless the JSON was already replaced)
	Dropped          uint64 // observations dropped at MaxEdges
	CorruptFiles     uint64 // unreadable service_map.json files moved aside
	Addresses        int    // host:port → service entries learned (see MaxAddresses)
	AddressesIgnored uint64 // new addresses not learned at MaxAddresses
}

// Map is one writer's view of a directory's service map. It is safe for
// concurrent use.
type Map struct {
	dir      string
	opts     Options
	lockName string

	flushMu sync.Mutex // one flush at a time; taken before mu

	mu       sync.Mutex
	delta    table
	inFlight int // edges of the delta being flushed; they count against MaxEdges
	stats    Stats
	lastLog  time.Time // of the drop warning

	addrs        addrTable // learned from SERVER spans; bounded by MaxAddresses
	addrsGen     uint64    // changes to addrs
	addrsFlushed uint64    // addrsGen last written to the file

	// Writer positions (positions.go): those the delta reaches, those last
	// written to the file, and writers to drop from it.
	positions writerTable
	committed writerTable
	forget    map[string]bool
}

// New returns a Map writing into dir (which must exist when Flush runs).
func New(dir string, opts Options) (*Map, error) {
	if dir == "" {
		return nil, errors.New("servicemap: empty directory")
	}
	if opts.JSONFile == "" {
		opts.JSONFile = "service_map.json"
	}
	if opts.MarkdownFile == "" {
		opts.MarkdownFile = "service_map.md"
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o640
	}
	if opts.MaxEdges == 0 {
		opts.MaxEdges = 10_000
	}
	if opts.MaxAddresses == 0 {
		opts.MaxAddresses = DefaultMaxAddresses
	}
	if opts.RelativeAccuracy == 0 {
		opts.RelativeAccuracy = DefaultRelativeAccuracy
	}
	if opts.MaxBins == 0 && opts.RelativeAccuracy > 0 && opts.RelativeAccuracy < 1 {
		opts.MaxBins = BinsFor(opts.RelativeAccuracy, DefaultDynamicRange)
	}
	if opts.ServiceAttributes == nil {
		opts.ServiceAttributes = DefaultServiceAttributes
	}
	if opts.RunAttribute == "" {
		opts.RunAttribute = DefaultRunAttribute
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	var errs []error
	for _, n := range []string{opts.JSONFile, opts.MarkdownFile} {
		if !plainName(n) {
			errs = append(errs, fmt.Errorf("file name %q must be a plain name inside the directory", n))
		}
	}
	if opts.JSONFile == opts.MarkdownFile {
		errs = append(errs, fmt.Errorf("JSON and Markdown file are both %q", opts.JSONFile))
	}
	if opts.MaxEdges < 1 {
		errs = append(errs, fmt.Errorf("max edges must be positive, got %d", opts.MaxEdges))
	}
	if opts.MaxAddresses < 1 {
		errs = append(errs, fmt.Errorf("max addresses must be positive, got %d", opts.MaxAddresses))
	}
	if _, err := NewSketch(opts.RelativeAccuracy, opts.MaxBins); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("servicemap: %w", err)
	}
	return &Map{
		dir:      dir,
		opts:     opts,
		lockName: "." + strings.TrimSuffix(opts.JSONFile, ".json") + ".lock",
		delta:    table{},
		addrs:    addrTable{},
	}, nil
}

func plainName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

// ObserveSpan records the edge span shows (see EdgeFromSpan, with the
// Options' attributes) and reports whether it showed one. From a SERVER
// span it learns the host:port it was reached at (server.address and
// server.port, net.host.name and net.host.port, or http.host) as an address
// of its service in its run, to fold host:port edges (see Observe).
func (m *Map) ObserveSpan(resource pcommon.Resource, span ptrace.Span) bool {
	if span.Kind() == ptrace.SpanKindServer {
		if addr := serverAddress(span.Attributes()); addr != "" {
			attrs := resource.Attributes()
			if svc := gymconv.Service(attrs, m.opts.ServiceAttributes); svc != "" {
				m.learn(runOf(attrs, m.opts.RunAttribute), addr, svc)
			}
		}
		return false
	}
	e, ok := EdgeFromSpan(span, resource, m.opts.ServiceAttributes, m.opts.RunAttribute)
	if ok {
		m.Observe(e)
	}
	return ok
}

// Observe records one call. Invalid UTF-8 in names is replaced (U+FFFD per
// bad byte, as in the JSON file); an edge without a client or server, or
// from a service to itself, is ignored. A server that is a host:port learned
// for the run (see ObserveSpan) is replaced by its service (and a call to
// the client's own address is then ignored). When the edge is new and MaxEdges are held,
// it flushes first (file I/O on the caller's goroutine). When other
// goroutines take the room each time (maxEarlyFlushes flushes in a row) the
// edge is added all the same: each observer adds at most one edge past
// MaxEdges before the next flush. Only when a flush fails is the call
// dropped, counted and logged (rate-limited).
func (m *Map) Observe(e Edge) {
	m.mu.Lock()
	if m.observeLocked(e, false) {
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()

	// Full: flush to make room. Other goroutines may fill the room before
	// this one gets it; retry while flushes succeed, a few times.
	var ferr error
	for range maxEarlyFlushes {
		if ferr = m.Flush(); ferr != nil {
			break
		}
		m.mu.Lock()
		ok := m.observeLocked(e, false)
		m.mu.Unlock()
		if ok {
			return
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.observeLocked(e, ferr == nil) { // the flushes worked: others took the room
		return
	}
	m.stats.Dropped++
	if now := m.opts.now(); now.Sub(m.lastLog) >= time.Minute {
		m.lastLog = now
		m.opts.Logger.Warn("Service map edge table is full and could not be flushed; dropping calls",
			zap.Int("max_edges", m.opts.MaxEdges), zap.Uint64("dropped_total", m.stats.Dropped), zap.Error(ferr))
	}
}

// observeLocked adds the call (names made valid, the server folded when it
// is a learned address) and reports whether it was taken or ignored; false
// means its edge is new and the table full (unless force).
func (m *Map) observeLocked(e Edge, force bool) bool {
	e.Run, e.Client, e.Server = validUTF8(e.Run), validUTF8(e.Client), validUTF8(e.Server)
	if e.Client == "" || e.Server == "" || e.Client == e.Server {
		return true
	}
	if svc, ok := m.addrs[addrKey{run: e.Run, addr: e.Server}]; ok {
		if e.Server = svc; e.Client == e.Server {
			return true
		}
	}
	return m.addLocked(e, float64(e.Latency)/float64(time.Millisecond), force)
}

// maxEarlyFlushes bounds the flushes one Observe makes to find room.
const maxEarlyFlushes = 4

func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

// addLocked adds the call unless its edge is new and the table is full
// (and not force).
func (m *Map) addLocked(e Edge, ms float64, force bool) bool {
	k := edgeKey{run: e.Run, client: e.Client, server: e.Server}
	s, ok := m.delta[k]
	if !ok {
		if !force && len(m.delta)+m.inFlight >= m.opts.MaxEdges {
			return false
		}
		sk, _ := NewSketch(m.opts.RelativeAccuracy, m.opts.MaxBins) // checked in New
		s = &edgeStats{latency: sk}
		m.delta[k] = s
	}
	s.calls++
	if e.Error {
		s.errors++
	}
	s.latency.Add(ms)
	return true
}

// Flush adds the calls observed since the last flush to the files (see the
// package comment). Callers run it at most every flush_interval and at
// shutdown; with nothing observed it does no I/O. On error the calls stay in
// memory for the next flush unless service_map.json was already replaced.
func (m *Map) Flush() error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()

	m.mu.Lock()
	delta := m.delta
	if len(delta) == 0 && m.addrsGen == m.addrsFlushed && len(m.positions) == 0 && len(m.forget) == 0 {
		m.mu.Unlock()
		return nil
	}
	m.delta = table{}
	m.inFlight = len(delta)
	addrs := make(addrTable, len(m.addrs))
	for k, v := range m.addrs {
		addrs[k] = v
	}
	gen := m.addrsGen
	positions, forget := m.positions, m.forget
	m.positions, m.forget = nil, nil
	m.mu.Unlock()

	committed, err := m.commit(delta, addrs, positions, forget)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight = 0
	if committed {
		m.stats.Flushes++
		m.addrsFlushed = gen
		if m.committed == nil {
			m.committed = writerTable{}
		}
		for id, p := range positions {
			m.committed[id] = p
		}
		for id := range forget {
			delete(m.committed, id)
		}
	} else {
		// Put them back; newer positions (observed meanwhile) win.
		for id, p := range positions {
			if _, newer := m.positions[id]; !newer {
				if m.positions == nil {
					m.positions = writerTable{}
				}
				m.positions[id] = p
			}
		}
		for id := range forget {
			if m.forget == nil {
				m.forget = map[string]bool{}
			}
			m.forget[id] = true
		}
	}
	if err != nil {
		m.stats.FlushErrors++
	}
	if !committed {
		// Put it back: what arrived meanwhile is newer and adds to it; the
		// union stays within MaxEdges since inFlight counted against it.
		for k, e := range m.delta {
			if d, ok := delta[k]; ok {
				d.calls += e.calls
				d.errors += e.errors
				d.latency.Merge(e.latency)
			} else {
				delta[k] = e
			}
		}
		m.delta = delta
	}
	if err != nil {
		return fmt.Errorf("servicemap: flush %q: %w", m.dir, err)
	}
	return nil
}

// Stats returns the counters.
func (m *Map) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Edges = len(m.delta) + m.inFlight
	s.Addresses = len(m.addrs)
	return s
}
