// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestIsHostPort(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1:46085":    true,
		"localhost:80":       true,
		"[::1]:8080":         true,
		"[fe80::1%eth0]:443": true,
		"policy_model":       false,
		"127.0.0.1":          false,
		"127.0.0.1:":         false,
		":80":                false,
		"host:80x":           false,
		"a b:80":             false,
		"a/b:80":             false,
		"::1:80":             false,
		"[]:80":              false,
		"[::1:80":            false,
		"http://h:80":        false,
		"":                   false,
	} {
		assert.Equal(t, want, isHostPort(s), "%q", s)
	}
}

func TestServerAddress(t *testing.T) {
	for _, tc := range []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"server.address": "127.0.0.1", "server.port": int64(46085)}, "127.0.0.1:46085"},
		{map[string]any{"server.address": "Model.Local", "server.port": "8000"}, "model.local:8000"},
		{map[string]any{"server.address": "::1", "server.port": int64(9)}, "[::1]:9"},
		{map[string]any{"net.host.name": "127.0.0.1", "net.host.port": int64(1)}, "127.0.0.1:1"},
		{map[string]any{"server.address": "a", "server.port": int64(1), "net.host.name": "b", "net.host.port": int64(2)}, "a:1"},
		{map[string]any{"http.host": "LocalHost:9000"}, "localhost:9000"},
		{map[string]any{"http.host": "localhost"}, ""},
		{map[string]any{"server.address": "127.0.0.1"}, ""},
		{map[string]any{"server.address": "a b", "server.port": int64(1)}, ""},
		{map[string]any{"server.address": "h", "server.port": 1.5}, ""},
		{map[string]any{}, ""},
	} {
		m := pcommon.NewMap()
		require.NoError(t, m.FromRaw(tc.attrs))
		assert.Equal(t, tc.want, serverAddress(m), "%v", tc.attrs)
	}
}

// serverSpan observes a SERVER span of service in run reached at host:port.
func serverSpan(t testing.TB, m *Map, run, service, host string, port int64) {
	t.Helper()
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", service)
	if run != "" {
		res.Attributes().PutStr("nemo.run.id", run)
	}
	span := ptrace.NewSpan()
	span.SetKind(ptrace.SpanKindServer)
	span.Attributes().PutStr("server.address", host)
	span.Attributes().PutInt("server.port", port)
	assert.False(t, m.ObserveSpan(res, span), "a SERVER span is no edge")
}

func TestLearnFromServerSpans(t *testing.T) {
	m := newTestMap(t, t.TempDir(), Options{})
	serverSpan(t, m, "r1", "policy_model", "127.0.0.1", 46085)
	serverSpan(t, m, "r1", "policy_model", "127.0.0.1", 46085) // again: no change
	serverSpan(t, m, "r2", "other_model", "127.0.0.1", 46085)  // the port reused in another run
	assert.Equal(t, addrTable{
		{run: "r1", addr: "127.0.0.1:46085"}: "policy_model",
		{run: "r2", addr: "127.0.0.1:46085"}: "other_model",
	}, m.addrs)
	assert.Equal(t, 2, m.Stats().Addresses)

	// Known at Observe: counted on the service edge straight away.
	m.Observe(Edge{Run: "r1", Client: "agent", Server: "127.0.0.1:46085", Latency: time.Second})
	m.Observe(Edge{Run: "r2", Client: "agent", Server: "127.0.0.1:46085", Latency: time.Second})
	m.Observe(Edge{Run: "r3", Client: "agent", Server: "127.0.0.1:46085", Latency: time.Second})
	m.Observe(Edge{Run: "r1", Client: "policy_model", Server: "127.0.0.1:46085"}) // to itself
	assert.Equal(t, expectedTable(t, []Edge{
		{Run: "r1", Client: "agent", Server: "policy_model", Latency: time.Second},
		{Run: "r2", Client: "agent", Server: "other_model", Latency: time.Second},
		{Run: "r3", Client: "agent", Server: "127.0.0.1:46085", Latency: time.Second},
	}), tableState(m.delta))
}

// addrEdges are calls between a model at 127.0.0.1:46085 and an agent at
// 127.0.0.1:40001 in run r, some named by address, some by service.
func addrEdges() []Edge {
	ms := time.Millisecond
	return []Edge{
		{Run: "r", Client: "agent", Server: "127.0.0.1:46085", Latency: 150 * ms, Error: true},
		{Run: "r", Client: "agent", Server: "policy_model", Latency: 300 * ms},
		{Run: "r", Client: "agent", Server: "127.0.0.1:46085", Latency: 7 * ms},
		{Run: "r", Client: "orchestrator", Server: "127.0.0.1:40001", Latency: 2 * time.Second},
		{Run: "r", Client: "orchestrator", Server: "agent", Latency: 3 * time.Second, Error: true},
		{Run: "r2", Client: "agent", Server: "127.0.0.1:46085", Latency: 5 * ms}, // another run: stays
	}
}

// folded is what addrEdges count as once both addresses are known.
func folded(edges []Edge) []Edge {
	out := make([]Edge, 0, len(edges))
	for _, e := range edges {
		if e.Run == "r" {
			switch e.Server {
			case "127.0.0.1:46085":
				e.Server = "policy_model"
			case "127.0.0.1:40001":
				e.Server = "agent"
			}
		}
		out = append(out, e)
	}
	return out
}

func learnBoth(t testing.TB, m *Map) {
	serverSpan(t, m, "r", "policy_model", "127.0.0.1", 46085)
	serverSpan(t, m, "r", "agent", "127.0.0.1", 40001)
}

func TestFoldAtFlush(t *testing.T) {
	edges := addrEdges()
	want := expectedTable(t, folded(edges))
	observe := func(m *Map, es []Edge) {
		for _, e := range es {
			m.Observe(e)
		}
	}
	t.Run("delta only", func(t *testing.T) {
		dir := t.TempDir()
		m := newTestMap(t, dir, Options{})
		observe(m, edges) // before the addresses are known
		learnBoth(t, m)
		require.NoError(t, m.Flush())
		assert.Equal(t, want, tableState(readTable(t, dir)))
	})
	t.Run("disk only", func(t *testing.T) {
		dir := t.TempDir()
		m := newTestMap(t, dir, Options{})
		observe(m, edges)
		require.NoError(t, m.Flush())
		assert.Equal(t, expectedTable(t, edges), tableState(readTable(t, dir)), "nothing known yet")
		learnBoth(t, m)
		require.NoError(t, m.Flush(), "new addresses alone flush")
		assert.Equal(t, want, tableState(readTable(t, dir)))
		assert.Equal(t, uint64(2), m.Stats().Flushes)
		require.NoError(t, m.Flush())
		assert.Equal(t, uint64(2), m.Stats().Flushes, "nothing new: no I/O")
	})
	t.Run("both", func(t *testing.T) {
		dir := t.TempDir()
		m := newTestMap(t, dir, Options{})
		observe(m, edges[:3])
		require.NoError(t, m.Flush())
		observe(m, edges[3:])
		learnBoth(t, m)
		require.NoError(t, m.Flush())
		assert.Equal(t, want, tableState(readTable(t, dir)))
	})
	// Two writers of one directory: one saw the SERVER spans, the other
	// only the host:port calls; whichever flushes last folds.
	for _, learnerFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("two processes, learner first %v", learnerFirst), func(t *testing.T) {
			dir := t.TempDir()
			learner := newTestMap(t, dir, Options{})
			caller := newTestMap(t, dir, Options{})
			learnBoth(t, learner)
			observe(caller, edges)
			order := []*Map{learner, caller}
			if !learnerFirst {
				order = []*Map{caller, learner}
			}
			for _, m := range order {
				require.NoError(t, m.Flush())
			}
			assert.Equal(t, want, tableState(readTable(t, dir)))
			// A third writer, restarted with nothing learned, folds with
			// the addresses in the file.
			third := newTestMap(t, dir, Options{})
			observe(third, edges)
			require.NoError(t, third.Flush())
			assert.Equal(t, expectedTable(t, folded(append(edges, edges...))), tableState(readTable(t, dir)))
		})
	}
}

func TestFoldConservesCalls(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 11))
		dir := t.TempDir()
		a := newTestMap(t, dir, Options{})
		b := newTestMap(t, dir, Options{})
		var all []Edge
		for round := range 1 + rng.IntN(4) {
			for _, m := range []*Map{a, b} {
				for range rng.IntN(30) {
					e := randomEdge(rng)
					if rng.IntN(2) == 0 {
						e.Server = map[string]string{"agent": "10.0.0.1:1", "model": "10.0.0.2:2", "resources": "10.0.0.3:3"}[e.Server]
					}
					m.Observe(e)
					all = append(all, e)
				}
				if rng.IntN(3) == 0 {
					for i, svc := range []string{"agent", "model", "resources"} {
						serverSpan(t, m, []string{"", "run-a", "run-b"}[rng.IntN(3)], svc, fmt.Sprintf("10.0.0.%d", i+1), int64(i+1))
					}
				}
				if round == 0 || rng.IntN(2) == 0 {
					require.NoError(t, m.Flush())
				}
			}
		}
		require.NoError(t, a.Flush())
		require.NoError(t, b.Flush())
		if len(all) == 0 {
			continue
		}
		// Every call is on disk, on its host:port edge or folded into its
		// service's, except calls from a service to itself: those named
		// so (never counted) and those to its own address (dropped).
		tb := readTable(t, dir)
		data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
		require.NoError(t, err)
		_, addrs, err := decodeFile(data, BinsFor(DefaultRelativeAccuracy, DefaultDynamicRange))
		require.NoError(t, err)
		var calls, errs, selfCalls uint64
		var want []Edge
		for _, e := range all {
			if e.Client == e.Server {
				continue
			}
			if svc, ok := addrs[addrKey{run: e.Run, addr: e.Server}]; ok {
				e.Server = svc
			}
			if e.Client == e.Server {
				selfCalls++
				continue
			}
			want = append(want, e)
			calls++
			if e.Error {
				errs++
			}
		}
		var gotCalls, gotErrs uint64
		for k, e := range tb {
			gotCalls += e.calls
			gotErrs += e.errors
			assert.Equal(t, e.calls, e.latency.Count())
			assert.NotEqual(t, k.client, k.server)
			_, known := addrs[addrKey{run: k.run, addr: k.server}]
			assert.False(t, known, "seed %d: %v not folded", seed, k)
		}
		assert.Equal(t, calls, gotCalls, "seed %d: calls", seed)
		assert.Equal(t, errs, gotErrs, "seed %d: errors", seed)
		t.Logf("seed %d: %d calls, %d to the client's own address", seed, calls, selfCalls)
		// And what is on disk is what one writer that knew the file's
		// addresses from the start would hold.
		assert.Equal(t, expectedTable(t, want), tableState(tb), "seed %d", seed)
	}
}

func TestFoldDropsSelfCalls(t *testing.T) {
	tb := table{}
	add := func(k edgeKey, ms float64, errored bool) {
		sk, err := NewSketch(DefaultRelativeAccuracy, 100)
		require.NoError(t, err)
		sk.Add(ms)
		e := &edgeStats{calls: 1, latency: sk}
		if errored {
			e.errors = 1
		}
		tb.merge(table{k: e})
	}
	add(edgeKey{"r", "agent", "1.1.1.1:1"}, 5, true)
	add(edgeKey{"r", "agent", "1.1.1.1:1"}, 6, false)
	add(edgeKey{"r", "orchestrator", "1.1.1.1:1"}, 7, false)
	self := tb.fold(addrTable{{run: "r", addr: "1.1.1.1:1"}: "agent"})
	assert.Equal(t, uint64(2), self)
	require.Len(t, tb, 1)
	assert.Equal(t, uint64(1), tb[edgeKey{"r", "orchestrator", "agent"}].calls)
}

func TestAddressBounds(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{MaxAddresses: 2})
	serverSpan(t, m, "r", "a", "h", 1)
	serverSpan(t, m, "r", "b", "h", 2)
	serverSpan(t, m, "r", "c", "h", 3)  // beyond the bound: ignored
	serverSpan(t, m, "r", "b2", "h", 2) // a known address may change service
	assert.Equal(t, addrTable{{"r", "h:1"}: "a", {"r", "h:2"}: "b2"}, m.addrs)
	st := m.Stats()
	assert.Equal(t, 2, st.Addresses)
	assert.Equal(t, uint64(1), st.AddressesIgnored)
	m.Observe(Edge{Run: "r", Client: "x", Server: "h:3"})
	require.NoError(t, m.Flush())
	assert.Contains(t, readTable(t, dir), edgeKey{"r", "x", "h:3"}, "unknown address: the edge stays")

	// The file keeps at most MaxAddresses too: this writer's first, then
	// the file's in (run, address) order.
	big := newTestMap(t, dir, Options{})
	for i := range 5 {
		serverSpan(t, big, "r", "s", "g", int64(i))
	}
	require.NoError(t, big.Flush())
	small := newTestMap(t, dir, Options{MaxAddresses: 3})
	serverSpan(t, small, "q", "z", "h", 9)
	require.NoError(t, small.Flush())
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	_, addrs, err := decodeFile(data, 100)
	require.NoError(t, err)
	assert.Equal(t, addrTable{{"q", "h:9"}: "z", {"r", "g:0"}: "s", {"r", "g:1"}: "s"}, addrs)

	_, err = New(dir, Options{MaxAddresses: -1})
	assert.ErrorContains(t, err, "max addresses")
}

func TestDecodeAddresses(t *testing.T) {
	// A version 1 file from before addresses reads as it did.
	old := `{"version": 1, "edges": []}`
	tb, addrs, err := decodeFile([]byte(old), 100)
	require.NoError(t, err)
	assert.Empty(t, tb)
	assert.Empty(t, addrs)
	edges, err := ReadEdges([]byte(old))
	require.NoError(t, err)
	assert.Empty(t, edges)

	// Entries that are not a host:port with a service are skipped.
	doc := `{"version": 1, "edges": [], "addresses": [
		{"run": "r", "address": "h:1", "service": "s"},
		{"run": "r", "address": "h", "service": "s"},
		{"run": "r", "address": "h:2", "service": ""},
		{"run": "r", "address": "../x:3", "service": "s"}]}`
	_, addrs, err = decodeFile([]byte(doc), 100)
	require.NoError(t, err)
	assert.Equal(t, addrTable{{"r", "h:1"}: "s"}, addrs)

	// Round trip, hostile names included.
	in := addrTable{{"r\n", "h:1"}: "s\"\u2028", {"", "[::1]:2"}: "t"}
	_, back, err := decodeFile(encodeFile(table{}, in), 100)
	require.NoError(t, err)
	assert.Equal(t, in, back)
	assert.True(t, strings.HasSuffix(string(encodeFile(table{}, nil)), "\"addresses\": []\n}\n"))
}
