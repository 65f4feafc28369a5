// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"
)

// maxServiceMapBytes bounds service_map.json (a few hundred bytes an edge).
const maxServiceMapBytes = 64 << 20

// mapEdge is one edge of service_map.json (internal/servicemap writes it):
// the calls from one service to another in one run, with the latency
// quantiles it derived from its sketch.
type mapEdge struct {
	Client string  `json:"client"`
	Server string  `json:"server"`
	Calls  uint64  `json:"calls"`
	Errors uint64  `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P90    float64 `json:"p90_ms"`
	P99    float64 `json:"p99_ms"`
}

// serviceMapFileJSON is the part of service_map.json the viewer reads.
type serviceMapFileJSON struct {
	Version int `json:"version"`
	Edges   []struct {
		Run       string `json:"run"`
		Client    string `json:"client"`
		Server    string `json:"server"`
		Calls     uint64 `json:"calls"`
		Errors    uint64 `json:"errors"`
		LatencyMS struct {
			P50 float64 `json:"p50"`
			P90 float64 `json:"p90"`
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
	} `json:"edges"`
}

// serviceMapCache is service_map.json parsed, kept while its size and mtime
// stay (the exporter replaces it at most once a flush interval).
type serviceMapCache struct {
	size  int64
	mtime time.Time
	edges map[string][]mapEdge
}

// serviceMap returns the edges of service_map.json by run; a missing file has
// none.
func (h *Handler) serviceMap() (map[string][]mapEdge, error) {
	f, st, err := h.dir.open(serviceMapFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]mapEdge{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h.mapMu.Lock()
	defer h.mapMu.Unlock()
	if c := h.mapCache; c != nil && c.size == st.Size() && c.mtime.Equal(st.ModTime()) {
		return c.edges, nil
	}
	if st.Size() > maxServiceMapBytes {
		return nil, fmt.Errorf("%s is %d bytes: %w", serviceMapFile.s, st.Size(), errTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxServiceMapBytes))
	if err != nil {
		return nil, err
	}
	var doc serviceMapFileJSON
	if len(b) > 0 {
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s is not a service map: %w", serviceMapFile.s, err)
		}
	}
	edges := map[string][]mapEdge{}
	for _, e := range doc.Edges {
		edges[e.Run] = append(edges[e.Run], mapEdge{
			Client: e.Client, Server: e.Server, Calls: e.Calls, Errors: e.Errors,
			P50: e.LatencyMS.P50, P90: e.LatencyMS.P90, P99: e.LatencyMS.P99,
		})
	}
	for _, es := range edges {
		slices.SortFunc(es, func(a, b mapEdge) int {
			return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Server, b.Server))
		})
	}
	h.mapCache = &serviceMapCache{size: st.Size(), mtime: st.ModTime(), edges: edges}
	return edges, nil
}

// mapPage is the answer of /api/servicemap.
type mapPage struct {
	Run   string    `json:"run"`
	Edges []mapEdge `json:"edges"`
}
