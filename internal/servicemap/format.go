// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap // import "github.com/otelcol-gym/otelcol-gym/internal/servicemap"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// formatVersion is the "version" of service_map.json this package writes and
// reads. A file with another version is never overwritten (see readTable).
const formatVersion = 1

// edgeKey identifies an edge: one (run, client service, server service).
type edgeKey struct {
	run, client, server string
}

func (k edgeKey) less(o edgeKey) bool {
	if k.run != o.run {
		return k.run < o.run
	}
	if k.client != o.client {
		return k.client < o.client
	}
	return k.server < o.server
}

// edgeStats is what is known of one edge. latency.Count() == calls.
type edgeStats struct {
	calls   uint64
	errors  uint64
	latency *Sketch // milliseconds
}

// table is a set of edges: a writer's delta, or the whole file.
type table map[edgeKey]*edgeStats

// merge adds every edge of o to t (o's sketches are not shared). A sketch
// already in t keeps its relative accuracy, so data on disk is converted at
// most once even when writers are configured differently.
func (t table) merge(o table) {
	for k, e := range o {
		cur, ok := t[k]
		if !ok {
			t[k] = &edgeStats{calls: e.calls, errors: e.errors, latency: e.latency.Clone()}
			continue
		}
		cur.calls += e.calls
		cur.errors += e.errors
		cur.latency.Merge(e.latency)
	}
}

func (t table) sortedKeys() []edgeKey {
	keys := make([]edgeKey, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	return keys
}

// The JSON document. Field order is the order written.
type fileJSON struct {
	Version   int           `json:"version"`
	Edges     []edgeJSON    `json:"edges"`
	Addresses []addressJSON `json:"addresses"` // optional; version 1 files before it lack it
	Writers   []writerJSON  `json:"writers"`   // optional; only when a writer keeps a position
}

// addressJSON is a host:port learned from SERVER spans, and its service.
type addressJSON struct {
	Run     string `json:"run"`
	Address string `json:"address"`
	Service string `json:"service"`
}

type edgeJSON struct {
	Run       string      `json:"run"`
	Client    string      `json:"client"`
	Server    string      `json:"server"`
	Calls     uint64      `json:"calls"`
	Errors    uint64      `json:"errors"`
	LatencyMS latencyJSON `json:"latency_ms"`
	Sketch    sketchJSON  `json:"sketch"`
}

// latencyJSON is derived from the sketch (rounded to 4 significant digits)
// for people and jq; readers ignore it.
type latencyJSON struct {
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func latencyOf(s *Sketch) latencyJSON {
	return latencyJSON{
		Min: round4(s.Min()),
		P50: round4(s.Quantile(0.50)),
		P90: round4(s.Quantile(0.90)),
		P99: round4(s.Quantile(0.99)),
		Max: round4(s.Max()),
	}
}

// round4 rounds to 4 significant digits: the sketch's error is 1%, more
// digits would be noise.
func round4(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	return r
}

// errCorrupt marks a file that is not a service map this package can read;
// it is moved aside.
var errCorrupt = errors.New("corrupt service map")

// errVersion marks a file written by another format version; it is left
// alone and the flush fails.
var errVersion = errors.New("unsupported service map version")

// decodeTable parses service_map.json. An empty document is an empty table.
// Edges listed twice are added up. Sketches are rebuilt with maxBins; a
// sketch with another relative accuracy is kept as it is.
func decodeTable(data []byte, maxBins int) (table, error) {
	t, _, err := decodeFile(data, maxBins)
	return t, err
}

// decodeFile is decodeTable with the learned addresses. An address entry
// that is not a host:port with a service is skipped (they are only hints).
func decodeFile(data []byte, maxBins int) (table, addrTable, error) {
	t, addrs, _, err := decodeDoc(data, maxBins)
	return t, addrs, err
}

// decodeDoc is decodeFile with the writers' positions.
func decodeDoc(data []byte, maxBins int) (table, addrTable, writerTable, error) {
	t := table{}
	addrs := addrTable{}
	writers := writerTable{}
	if len(bytes.TrimSpace(data)) == 0 {
		return t, addrs, writers, nil
	}
	// The version first: another version may have another shape.
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	if head.Version == nil {
		return nil, nil, nil, fmt.Errorf("%w: no version", errCorrupt)
	}
	if *head.Version != formatVersion {
		return nil, nil, nil, fmt.Errorf("%w: %d (this build reads %d)", errVersion, *head.Version, formatVersion)
	}
	var doc fileJSON
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	for i, e := range doc.Edges {
		if e.Client == "" || e.Server == "" {
			return nil, nil, nil, fmt.Errorf("%w: edge %d: empty client or server", errCorrupt, i)
		}
		s, err := sketchFromJSON(e.Sketch, maxBins)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: edge %d: %w", errCorrupt, i, err)
		}
		if s.Count() != e.Calls || e.Errors > e.Calls {
			return nil, nil, nil, fmt.Errorf("%w: edge %d: %d calls, %d errors, %d latencies", errCorrupt, i, e.Calls, e.Errors, s.Count())
		}
		k := edgeKey{run: e.Run, client: e.Client, server: e.Server}
		if cur, ok := t[k]; ok {
			cur.calls += e.Calls
			cur.errors += e.Errors
			cur.latency.Merge(s)
			continue
		}
		t[k] = &edgeStats{calls: e.Calls, errors: e.Errors, latency: s}
	}
	for _, a := range doc.Addresses {
		if a.Service == "" || !isHostPort(a.Address) {
			continue
		}
		addrs[addrKey{run: a.Run, addr: a.Address}] = a.Service
	}
	for _, w := range doc.Writers {
		if w.ID != "" {
			writers[w.ID] = max(writers[w.ID], w.Position)
		}
	}
	return t, addrs, writers, nil
}

// encodeTable writes the table as stable, indented JSON sorted by (run,
// client, server): one line per field, each edge's latency and sketch on a
// line of their own, so a person can read it and a diff is small.
func encodeTable(t table) []byte { return encodeFile(t, nil) }

// encodeFile is encodeTable with the learned addresses after the edges,
// sorted by (run, address), one per line.
func encodeFile(t table, addrs addrTable) []byte { return encodeDoc(t, addrs, nil) }

// encodeDoc is encodeFile with the writers' positions after the addresses,
// sorted by id (the field is left out when there are none).
func encodeDoc(t table, addrs addrTable, writers writerTable) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"version\": ")
	b.WriteString(strconv.Itoa(formatVersion))
	b.WriteString(",\n  \"edges\": [")
	for i, k := range t.sortedKeys() {
		e := t[k]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    {\n      \"run\": ")
		writeJSONString(&b, k.run)
		b.WriteString(",\n      \"client\": ")
		writeJSONString(&b, k.client)
		b.WriteString(",\n      \"server\": ")
		writeJSONString(&b, k.server)
		fmt.Fprintf(&b, ",\n      \"calls\": %d,\n      \"errors\": %d,\n      \"latency_ms\": ", e.calls, e.errors)
		l := latencyOf(e.latency)
		b.WriteString(`{"min": `)
		writeNumber(&b, l.Min)
		b.WriteString(`, "p50": `)
		writeNumber(&b, l.P50)
		b.WriteString(`, "p90": `)
		writeNumber(&b, l.P90)
		b.WriteString(`, "p99": `)
		writeNumber(&b, l.P99)
		b.WriteString(`, "max": `)
		writeNumber(&b, l.Max)
		b.WriteString("},\n      \"sketch\": ")
		b.WriteString(`{"relative_accuracy": `)
		writeNumber(&b, e.latency.accuracy)
		b.WriteString(`, "min": `)
		writeNumber(&b, e.latency.min)
		b.WriteString(`, "max": `)
		writeNumber(&b, e.latency.max)
		fmt.Fprintf(&b, `, "zero_count": %d, "bins": {`, e.latency.zero)
		first := true
		e.latency.eachBin(func(i int, c uint64) {
			if !first {
				b.WriteString(", ")
			}
			first = false
			fmt.Fprintf(&b, `"%d": %d`, i, c)
		})
		b.WriteString("}}\n    }")
	}
	if len(t) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("],\n  \"addresses\": [")
	for i, k := range addrs.sortedKeys() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    {\"run\": ")
		writeJSONString(&b, k.run)
		b.WriteString(", \"address\": ")
		writeJSONString(&b, k.addr)
		b.WriteString(", \"service\": ")
		writeJSONString(&b, addrs[k])
		b.WriteByte('}')
	}
	if len(addrs) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]")
	if len(writers) > 0 {
		b.WriteString(",\n  \"writers\": [")
		for i, id := range writers.sortedIDs() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n    {\"id\": ")
			writeJSONString(&b, id)
			fmt.Fprintf(&b, ", \"position\": %d}", writers[id])
		}
		b.WriteString("\n  ]")
	}
	b.WriteString("\n}\n")
	return b.Bytes()
}

// writeJSONString writes s as a JSON string: invalid UTF-8 becomes U+FFFD,
// control characters and U+2028/2029 are escaped, <>& are kept readable.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// writeNumber writes a finite float in plain decimal, shortest form that
// reads back to the same float64.
func writeNumber(b *bytes.Buffer, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		x = 0 // never produced; keep the document valid regardless
	}
	b.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
}

// EdgeSummary is one edge of service_map.json as a reader sees it.
type EdgeSummary struct {
	Run, Client, Server string
	Calls, Errors       uint64
	// The quantiles (ms) are within the sketch's relative accuracy; Min
	// and Max are exact.
	MinMS, P50MS, P90MS, P99MS, MaxMS float64
}

// ReadEdges parses the content of a service_map.json (for tests and tools),
// sorted by (run, client, server).
func ReadEdges(data []byte) ([]EdgeSummary, error) {
	t, err := decodeTable(data, BinsFor(DefaultRelativeAccuracy, DefaultDynamicRange))
	if err != nil {
		return nil, err
	}
	out := make([]EdgeSummary, 0, len(t))
	for _, k := range t.sortedKeys() {
		e := t[k]
		out = append(out, EdgeSummary{
			Run: k.run, Client: k.client, Server: k.server,
			Calls: e.calls, Errors: e.errors,
			MinMS: e.latency.Min(), P50MS: e.latency.Quantile(0.5), P90MS: e.latency.Quantile(0.9),
			P99MS: e.latency.Quantile(0.99), MaxMS: e.latency.Max(),
		})
	}
	return out, nil
}
