// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package servicemap

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeNow is a fixed clock for names like service_map.json.corrupt-<unix>.
var fakeNow = func() time.Time { return time.Unix(1787313600, 0) }

func newTestMap(t testing.TB, dir string, opts Options) *Map {
	t.Helper()
	if opts.now == nil {
		opts.now = fakeNow
	}
	m, err := New(dir, opts)
	require.NoError(t, err)
	return m
}

func readTraces(t testing.TB, path string) ptrace.Traces {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	require.NoError(t, err)
	return td
}

// observeTraces feeds every span to m the way the exporter does; it returns
// how many spans showed an edge.
func observeTraces(m *Map, td ptrace.Traces) int {
	n := 0
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if m.ObserveSpan(rs.Resource(), span) {
					n++
				}
			}
		}
	}
	return n
}

func readTable(t testing.TB, dir string) table {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	tb, err := decodeTable(data, BinsFor(DefaultRelativeAccuracy, DefaultDynamicRange))
	require.NoError(t, err)
	return tb
}

// edgeState is an edge's observable content, for equality checks.
type edgeState struct {
	Calls, Errors uint64
	Latency       state
}

func tableState(tb table) map[edgeKey]edgeState {
	out := map[edgeKey]edgeState{}
	for k, e := range tb {
		out[k] = edgeState{e.calls, e.errors, stateOf(e.latency)}
	}
	return out
}

// expectedTable is what one Map that saw every edge would hold.
func expectedTable(t testing.TB, edges []Edge) map[edgeKey]edgeState {
	m := newTestMap(t, t.TempDir(), Options{})
	for _, e := range edges {
		m.Observe(e)
	}
	return tableState(m.delta)
}

func assertGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o600))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), string(got), "%s differs (go test -update rewrites it; inspect the diff)", path)
}

func TestGoldenMultiRun(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{})
	td := readTraces(t, filepath.Join("testdata", "multi_run.traces.json"))
	// 2 orchestrator→agent, 5 agent→model, 3 agent→resources in run-a;
	// 2 in run-b; 1 without a run. Not: the call to itself, the CLIENT span
	// without peer.service, SERVER and INTERNAL spans. Three to a host:port:
	// run-a's to the model folds into policy_model, run-a's to the agent's own
	// address is dropped, run-b's (the port is known in run-a only) stays.
	require.Equal(t, 16, observeTraces(m, td))
	require.NoError(t, m.Flush())

	for _, name := range []string{"service_map.json", "service_map.md"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assertGolden(t, filepath.Join("testdata", "multi_run."+name), got)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".service_map.lock", "service_map.json", "service_map.md"}, names, "no temporary files left")
}

func TestGoldenHostileNames(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{})
	for i, name := range hostileNames {
		m.Observe(Edge{Run: name, Client: "agent", Server: name, Latency: time.Duration(i+1) * time.Millisecond})
		m.Observe(Edge{Run: "run-1", Client: name, Server: "model", Latency: time.Duration(i+1) * time.Millisecond, Error: true})
	}
	require.NoError(t, m.Flush())
	md, err := os.ReadFile(filepath.Join(dir, "service_map.md"))
	require.NoError(t, err)
	assertGolden(t, filepath.Join("testdata", "hostile_names.service_map.md"), md)
	checkMarkdown(t, md, len(hostileNames)*2)

	// The JSON keeps every name (invalid UTF-8 replaced) and reads back.
	tb := readTable(t, dir)
	require.Len(t, tb, len(hostileNames)*2)
	for _, name := range hostileNames {
		assert.Contains(t, tb, edgeKey{run: "run-1", client: string([]rune(name)), server: "model"})
	}
}

func TestTwoMapsMergeAlternately(t *testing.T) {
	// Seeded rather than rapid: every flush fsyncs three times, and a
	// hundred cases of a dozen flushes is too slow for a shared machine.
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		a := newTestMap(t, dir, Options{})
		b := newTestMap(t, dir, Options{})
		var all []Edge
		for round := range 1 + rng.IntN(5) {
			for _, m := range []*Map{a, b} {
				for range rng.IntN(40) {
					e := randomEdge(rng)
					m.Observe(e)
					all = append(all, e)
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
		require.Equal(t, expectedTable(t, all), tableState(readTable(t, dir)), "seed %d", seed)
	}
}

func randomEdge(rng *rand.Rand) Edge {
	return Edge{
		Run:     []string{"", "run-a", "run-b"}[rng.IntN(3)],
		Client:  []string{"orchestrator", "agent"}[rng.IntN(2)],
		Server:  []string{"agent", "model", "resources"}[rng.IntN(3)],
		Latency: time.Duration(rng.Int64N(int64(time.Minute))),
		Error:   rng.IntN(10) == 0,
	}
}

func TestRestartKeepsEdges(t *testing.T) {
	dir := t.TempDir()
	first := newTestMap(t, dir, Options{})
	e1 := Edge{Run: "r", Client: "agent", Server: "model", Latency: 120 * time.Millisecond}
	e2 := Edge{Run: "r", Client: "agent", Server: "resources", Latency: 8 * time.Millisecond, Error: true}
	first.Observe(e1)
	first.Observe(e2)
	require.NoError(t, first.Flush())
	before, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)

	// A new process: nothing observed yet, the flush touches nothing.
	second := newTestMap(t, dir, Options{})
	require.NoError(t, second.Flush())
	after, err := os.ReadFile(filepath.Join(dir, "service_map.json"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Zero(t, second.Stats().Flushes)

	e3 := Edge{Run: "r", Client: "agent", Server: "model", Latency: 300 * time.Millisecond, Error: true}
	second.Observe(e3)
	require.NoError(t, second.Flush())
	assert.Equal(t, expectedTable(t, []Edge{e1, e2, e3}), tableState(readTable(t, dir)))
	assert.Equal(t, Stats{Flushes: 1}, second.Stats())
}

func TestCorruptFileIsMovedAside(t *testing.T) {
	for name, content := range map[string]string{
		"not json":           "{\"version\": 1, \"edges\": [",
		"no version":         `{"edges": []}`,
		"calls != latencies": `{"version": 1, "edges": [{"run": "", "client": "a", "server": "b", "calls": 2, "errors": 0, "sketch": {"relative_accuracy": 0.01, "min": 1, "max": 1, "zero_count": 0, "bins": {"0": 1}}}]}`,
		"errors > calls":     `{"version": 1, "edges": [{"run": "", "client": "a", "server": "b", "calls": 0, "errors": 1, "sketch": {"relative_accuracy": 0.01, "bins": {}}}]}`,
		"empty client":       `{"version": 1, "edges": [{"run": "", "client": "", "server": "b", "calls": 0, "errors": 0, "sketch": {"relative_accuracy": 0.01, "bins": {}}}]}`,
		"bad sketch":         `{"version": 1, "edges": [{"run": "", "client": "a", "server": "b", "calls": 0, "errors": 0, "sketch": {"relative_accuracy": 2, "bins": {}}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "service_map.json")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			core, logs := observer.New(zapcore.WarnLevel)
			m := newTestMap(t, dir, Options{Logger: zap.New(core)})
			e := Edge{Client: "agent", Server: "model", Latency: time.Second}
			m.Observe(e)
			require.NoError(t, m.Flush())

			aside := path + ".corrupt-1787313600"
			kept, err := os.ReadFile(aside)
			require.NoError(t, err, "the corrupt file is kept aside")
			assert.Equal(t, content, string(kept))
			assert.Equal(t, expectedTable(t, []Edge{e}), tableState(readTable(t, dir)))
			assert.Equal(t, uint64(1), m.Stats().CorruptFiles)
			require.Equal(t, 1, logs.Len())
			assert.Equal(t, aside, filepath.Join(dir, logs.All()[0].ContextMap()["moved_to"].(string)))

			// A second corrupt file in the same second gets its own name.
			require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
			m.Observe(e)
			require.NoError(t, m.Flush())
			kept, err = os.ReadFile(aside + "-1")
			require.NoError(t, err)
			assert.Equal(t, "garbage", string(kept))
		})
	}
}

func TestEmptyFileIsAnEmptyMap(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "service_map.json"), nil, 0o600))
	m := newTestMap(t, dir, Options{})
	e := Edge{Client: "agent", Server: "model", Latency: time.Second}
	m.Observe(e)
	require.NoError(t, m.Flush())
	assert.Equal(t, expectedTable(t, []Edge{e}), tableState(readTable(t, dir)))
	assert.Zero(t, m.Stats().CorruptFiles)
}

func TestOtherVersionIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "service_map.json")
	future := `{"version": 2, "edges": "something new"}`
	require.NoError(t, os.WriteFile(path, []byte(future), 0o600))
	m := newTestMap(t, dir, Options{})
	e := Edge{Client: "agent", Server: "model", Latency: time.Second}
	m.Observe(e)
	err := m.Flush()
	require.ErrorIs(t, err, errVersion)
	data, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	assert.Equal(t, future, string(data), "never overwritten")
	assert.Equal(t, Stats{Edges: 1, FlushErrors: 1}, m.Stats(), "the delta is kept")

	// Once the file is gone (an operator moved it), the kept calls land.
	require.NoError(t, os.Remove(path))
	m.Observe(e)
	require.NoError(t, m.Flush())
	assert.Equal(t, expectedTable(t, []Edge{e, e}), tableState(readTable(t, dir)))
}

func TestFailedFlushKeepsDelta(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "captures")
	m := newTestMap(t, dir, Options{})
	var all []Edge
	for i := range 5 {
		e := Edge{Run: "r", Client: "agent", Server: "model", Latency: time.Duration(i) * time.Millisecond}
		m.Observe(e)
		all = append(all, e)
	}
	require.Error(t, m.Flush(), "the directory does not exist yet")
	e := Edge{Run: "r", Client: "agent", Server: "resources", Latency: time.Millisecond}
	m.Observe(e)
	all = append(all, e)
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, m.Flush())
	assert.Equal(t, expectedTable(t, all), tableState(readTable(t, dir)))
	assert.Equal(t, Stats{Flushes: 1, FlushErrors: 1}, m.Stats())
}

func TestSymlinksAreNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(outside, []byte("keep me"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "service_map.json")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "service_map.md")))
	m := newTestMap(t, dir, Options{})
	m.Observe(Edge{Client: "agent", Server: "model", Latency: time.Second})
	require.NoError(t, m.Flush())

	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data))
	for _, name := range []string{"service_map.json", "service_map.md"} {
		fi, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular(), name)
	}
	fi, err := os.Lstat(filepath.Join(dir, "service_map.json.corrupt-1787313600"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link itself was moved aside")

	// A symlinked lock file is refused.
	dir2 := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(dir2, ".service_map.lock")))
	m2 := newTestMap(t, dir2, Options{})
	m2.Observe(Edge{Client: "agent", Server: "model", Latency: time.Second})
	require.Error(t, m2.Flush())
	assert.Equal(t, 1, m2.Stats().Edges)
	_, err = os.Lstat(filepath.Join(dir2, "service_map.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestFileMode(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{FileMode: 0o600, JSONFile: "edges.json", MarkdownFile: "edges.md"})
	m.Observe(Edge{Client: "agent", Server: "model", Latency: time.Second})
	require.NoError(t, m.Flush())
	for _, name := range []string{"edges.json", "edges.md", ".edges.lock"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Zero(t, fi.Mode().Perm()&^0o600, "%s is %v", name, fi.Mode())
	}
}

func TestMaxEdgesFlushesEarly(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{MaxEdges: 3})
	var all []Edge
	for i := range 10 {
		e := Edge{Run: "r", Client: "agent", Server: "s" + string(rune('a'+i)), Latency: time.Millisecond}
		m.Observe(e)
		all = append(all, e)
		assert.LessOrEqual(t, m.Stats().Edges, 3)
	}
	require.NoError(t, m.Flush())
	assert.Equal(t, expectedTable(t, all), tableState(readTable(t, dir)))
	st := m.Stats()
	assert.Equal(t, uint64(4), st.Flushes, "3 early flushes (at the 4th, 7th, 10th edge) and the last")
	assert.Zero(t, st.Dropped)
}

func TestMaxEdgesDropsWhenFlushFails(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	m := newTestMap(t, filepath.Join(t.TempDir(), "missing"), Options{MaxEdges: 2, Logger: zap.New(core)})
	for i := range 5 {
		m.Observe(Edge{Client: "agent", Server: "s" + string(rune('a'+i))})
	}
	m.Observe(Edge{Client: "agent", Server: "sa"}) // a known edge still counts
	st := m.Stats()
	assert.Equal(t, 2, st.Edges)
	assert.Equal(t, uint64(3), st.Dropped)
	assert.Equal(t, 1, logs.Len(), "rate-limited to one warning per minute")
	assert.Equal(t, uint64(2), m.delta[edgeKey{client: "agent", server: "sa"}].calls)
}

func TestConcurrentObserveAndFlush(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{MaxEdges: 4})
	const workers, perWorker = 4, 300
	var wg sync.WaitGroup
	edges := make([][]Edge, workers)
	for w := range workers {
		for i := range perWorker {
			edges[w] = append(edges[w], Edge{
				Run: "r", Client: "c" + string(rune('0'+w)), Server: "s" + string(rune('0'+i%3)),
				Latency: time.Duration(i) * time.Microsecond * 37, Error: i%7 == 0,
			})
		}
	}
	stop := make(chan struct{})
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for {
			select {
			case <-stop:
				return
			default:
				assert.NoError(t, m.Flush())
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range edges[w] {
				m.Observe(e)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-flushed
	require.NoError(t, m.Flush())
	var all []Edge
	for _, es := range edges {
		all = append(all, es...)
	}
	assert.Equal(t, expectedTable(t, all), tableState(readTable(t, dir)))
	assert.Zero(t, m.Stats().Dropped)
}

func TestNewValidates(t *testing.T) {
	for name, opts := range map[string]Options{
		"path in json name":  {JSONFile: "../x.json"},
		"dot md name":        {MarkdownFile: ".."},
		"same names":         {JSONFile: "a", MarkdownFile: "a"},
		"negative max edges": {MaxEdges: -1},
		"accuracy too big":   {RelativeAccuracy: 1},
		"accuracy negative":  {RelativeAccuracy: -0.1},
		"one bin":            {MaxBins: 1},
		"NUL in name":        {JSONFile: "a\x00b"},
	} {
		_, err := New(t.TempDir(), opts)
		assert.Error(t, err, name)
	}
	_, err := New("", Options{})
	assert.Error(t, err)
	m, err := New(t.TempDir(), Options{})
	require.NoError(t, err)
	assert.Equal(t, ".service_map.lock", m.lockName)
	assert.Equal(t, 1038, m.opts.MaxBins)
}

func TestEdgeFromSpan(t *testing.T) {
	td := readTraces(t, filepath.Join("testdata", "multi_run.traces.json"))
	type got struct {
		Edge
		ok bool
	}
	var all []got
	for _, rs := range td.ResourceSpans().All() {
		for _, span := range rs.ScopeSpans().At(0).Spans().All() {
			e, ok := EdgeFromSpan(span, rs.Resource(), nil, "")
			all = append(all, got{e, ok})
		}
	}
	ms := time.Millisecond
	want := []got{
		{Edge{"run-a", "ng_orchestrator", "simple_agent", 1200 * ms, false}, true},
		{Edge{"run-a", "ng_orchestrator", "simple_agent", 1500 * ms, false}, true},
		{ok: false}, // gym.job INTERNAL
		{Edge{"run-a", "simple_agent", "policy_model", 100 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "policy_model", 200 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "policy_model", 300 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "policy_model", 400 * ms, true}, true},
		{Edge{"run-a", "simple_agent", "policy_model", 5000 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "math_resources", 5 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "math_resources", 7 * ms, false}, true},
		{Edge{"run-a", "simple_agent", "math_resources", 9500 * time.Microsecond, false}, true},
		{ok: false}, // to itself
		{ok: false}, // no peer.service
		{Edge{"run-a", "simple_agent", "127.0.0.1:46085", 150 * ms, true}, true}, // EdgeFromSpan does not fold
		{Edge{"run-a", "simple_agent", "127.0.0.1:40001", 10 * ms, false}, true},
		{ok: false}, // SERVER
		{ok: false}, // model SERVER
		{Edge{"run-b", "simple_agent", "policy_model", 250 * ms, true}, true},
		{Edge{"run-b", "simple_agent", "policy_model", 0, false}, true},
		{Edge{"run-b", "simple_agent", "127.0.0.1:46085", 20 * ms, false}, true},
		{Edge{"", "simple_agent", "policy_model", 42 * ms, false}, true},
	}
	assert.Equal(t, want, all)
}

func TestEdgeFromSpanAttributes(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource()
	res.Attributes().PutStr("service.name", "routing")
	res.Attributes().PutStr("service.name.override", "")
	res.Attributes().PutInt("job", 7)
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetKind(ptrace.SpanKindClient)
	span.Attributes().PutStr("peer.service", "model")
	span.SetStartTimestamp(200)
	span.SetEndTimestamp(100) // clock skew

	e, ok := EdgeFromSpan(span, res, nil, "")
	require.True(t, ok)
	assert.Equal(t, Edge{Client: "routing", Server: "model"}, e, "an empty override is not present; negative duration is 0")

	e, ok = EdgeFromSpan(span, res, []string{"missing", "service.name"}, "job")
	require.True(t, ok)
	assert.Equal(t, Edge{Run: "7", Client: "routing", Server: "model"}, e, "configured attributes, any type")

	_, ok = EdgeFromSpan(span, res, []string{"missing"}, "")
	assert.False(t, ok, "no service")

	span.Attributes().PutStr("peer.service", "")
	_, ok = EdgeFromSpan(span, res, nil, "")
	assert.False(t, ok, "empty peer.service")
}

func TestInFlightEdgesCountAgainstTheBound(t *testing.T) {
	dir := t.TempDir()
	m := newTestMap(t, dir, Options{MaxEdges: 3})
	for _, s := range []string{"a", "b", "c"} {
		m.Observe(Edge{Client: "agent", Server: s, Latency: time.Millisecond})
	}
	// Another writer holds the lock: our flush waits inside commit.
	lock, err := os.OpenFile(filepath.Join(dir, ".service_map.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	defer lock.Close()
	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_EX))
	flushed := make(chan error)
	go func() { flushed <- m.Flush() }()
	for { // until the flush has taken the delta (no timing involved)
		m.mu.Lock()
		n := m.inFlight
		m.mu.Unlock()
		if n == 3 {
			break
		}
		runtime.Gosched()
	}
	m.mu.Lock()
	assert.False(t, m.addLocked(Edge{Client: "agent", Server: "d"}, 1, false), "a new edge does not fit while 3 are in flight")
	m.mu.Unlock()
	assert.Equal(t, 3, m.Stats().Edges)

	require.NoError(t, unix.Flock(int(lock.Fd()), unix.LOCK_UN))
	require.NoError(t, <-flushed)
	assert.Zero(t, m.Stats().Edges)
	m.Observe(Edge{Client: "agent", Server: "d", Latency: time.Millisecond})
	assert.Equal(t, 1, m.Stats().Edges)
}

func TestMarkdownFailureDoesNotRecount(t *testing.T) {
	dir := t.TempDir()
	// A directory where the Markdown goes: its rename fails after the JSON
	// one succeeded.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "service_map.md"), 0o750))
	m := newTestMap(t, dir, Options{})
	e := Edge{Client: "agent", Server: "model", Latency: time.Second}
	m.Observe(e)
	err := m.Flush()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "service_map.md")
	assert.Equal(t, Stats{Flushes: 1, FlushErrors: 1}, m.Stats(), "the JSON holds the delta: it is not kept")
	assert.Equal(t, expectedTable(t, []Edge{e}), tableState(readTable(t, dir)))

	require.NoError(t, os.Remove(filepath.Join(dir, "service_map.md")))
	m.Observe(e)
	require.NoError(t, m.Flush())
	assert.Equal(t, expectedTable(t, []Edge{e, e}), tableState(readTable(t, dir)), "counted once each")
	md, err := os.ReadFile(filepath.Join(dir, "service_map.md"))
	require.NoError(t, err)
	checkMarkdown(t, md, 1)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, en := range entries {
		assert.NotContains(t, en.Name(), ".tmp-", "temporary files are removed on failure")
	}
}
