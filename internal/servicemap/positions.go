// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

// Writer positions. A writer that observes the spans of a journal (the
// gymspans exporter's combined file) can tell the map how far into it the
// observed spans go: ObserveAt adds a group of spans and the position after
// them, atomically with respect to Flush, and the flush that writes their
// calls into service_map.json writes the position in the same rename
// ("writers": [{"id", "position"}]). After a crash, the calls on disk are
// exactly those of the spans before the writer's position there, so
// observing again the spans from that position on counts every call once.

import (
	"fmt"
	"iter"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// writerJSON is one writer's position in service_map.json.
type writerJSON struct {
	ID       string `json:"id"`
	Position uint64 `json:"position"`
}

// writerTable maps a writer id to its position.
type writerTable map[string]uint64

func (w writerTable) sortedIDs() []string {
	ids := make([]string, 0, len(w))
	for id := range w {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// merge returns disk with the positions of mem (newer, they win) and
// without the writers in forget.
func (w writerTable) merge(mem writerTable, forget map[string]bool) writerTable {
	out := writerTable{}
	for id, p := range w {
		if !forget[id] {
			out[id] = p
		}
	}
	for id, p := range mem {
		out[id] = p
	}
	return out
}

// ObserveAt observes spans (see ObserveSpan) as one group and records that
// writer's observations now reach pos. A flush never writes part of a
// group: when the group may not fit under MaxEdges, what is held is
// flushed first, and the group is then added whole (it may take the table
// past MaxEdges by its own new edges).
func (m *Map) ObserveAt(writer string, pos uint64, spans iter.Seq2[pcommon.Resource, ptrace.Span]) {
	type learned struct{ run, addr, svc string }
	var edges []Edge
	var addrs []learned
	for res, span := range spans {
		if span.Kind() == ptrace.SpanKindServer {
			if addr := serverAddress(span.Attributes()); addr != "" {
				attrs := res.Attributes()
				if svc := gymconv.Service(attrs, m.opts.ServiceAttributes); svc != "" {
					addrs = append(addrs, learned{runOf(attrs, m.opts.RunAttribute), addr, svc})
				}
			}
			continue
		}
		if e, ok := EdgeFromSpan(span, res, m.opts.ServiceAttributes, m.opts.RunAttribute); ok {
			edges = append(edges, e)
		}
	}
	m.mu.Lock()
	full := len(m.delta)+m.inFlight+len(edges) > m.opts.MaxEdges && len(m.delta) > 0
	m.mu.Unlock()
	if full {
		_ = m.Flush() // on failure the group is added all the same, past the bound
	}
	for _, a := range addrs {
		m.learn(a.run, a.addr, a.svc)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range edges {
		m.observeLocked(e, true)
	}
	if m.positions == nil {
		m.positions = writerTable{}
	}
	m.positions[writer] = pos
}

// Committed returns the position of writer that this map last wrote into
// service_map.json.
func (m *Map) Committed(writer string) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.committed[writer]
	return p, ok
}

// Forget drops writer's position from service_map.json at the next flush
// (a writer whose journal is done with).
func (m *Map) Forget(writer string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forget == nil {
		m.forget = map[string]bool{}
	}
	m.forget[writer] = true
	delete(m.positions, writer)
}

// Position reads writer's position in service_map.json (under the lock):
// the calls of its spans before it are in the file.
func (m *Map) Position(writer string) (uint64, bool, error) {
	dirFD, err := unix.Open(m.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false, fmt.Errorf("servicemap: open %q: %w", m.dir, err)
	}
	defer unix.Close(dirFD)
	unlock, err := m.lock(dirFD)
	if err != nil {
		return 0, false, fmt.Errorf("servicemap: %w", err)
	}
	defer unlock()
	doc, err := m.readLocked(dirFD)
	if err != nil {
		return 0, false, fmt.Errorf("servicemap: %w", err)
	}
	p, ok := doc.writers[writer]
	return p, ok, nil
}
