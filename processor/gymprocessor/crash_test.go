// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"pgregory.net/rapid"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// memStorage is a storage extension that keeps its keys in memory and
// outlives the processors that use it: a "kill -9" is dropping a processor
// without Shutdown, and the next one opens the same store.
type memStorage struct {
	component.StartFunc
	component.ShutdownFunc
	mu   sync.Mutex
	keys map[string][]byte
	// failSets, when set, makes every Set and Batch with a Set fail;
	// failPrefix, every Set and Batch with a Set of a key it begins.
	failSets   bool
	failPrefix string
	// recordBatches counts the transactions that wrote records; gate, when
	// set, holds each of them: it sends on gate as it begins, and again
	// before it goes on (outside mu).
	recordBatches int
	gate          chan struct{}
}

func newMemStorage() *memStorage { return &memStorage{keys: map[string][]byte{}} }

func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return memClient{m}, nil
}

type memClient struct{ m *memStorage }

func (c memClient) Get(ctx context.Context, key string) ([]byte, error) {
	op := storage.GetOperation(key)
	return op.Value, c.Batch(ctx, op)
}

func (c memClient) Set(ctx context.Context, key string, v []byte) error {
	return c.Batch(ctx, storage.SetOperation(key, v))
}

func (c memClient) Delete(ctx context.Context, key string) error {
	return c.Batch(ctx, storage.DeleteOperation(key))
}

func (c memClient) Batch(_ context.Context, ops ...*storage.Operation) error {
	records := slices.ContainsFunc(ops, func(op *storage.Operation) bool { return strings.Contains(op.Key, "/r/") && op.Type == storage.Set })
	c.m.mu.Lock()
	gate := c.m.gate
	c.m.mu.Unlock()
	if records && gate != nil {
		gate <- struct{}{}
		gate <- struct{}{}
	}
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if records {
		c.m.recordBatches++
	}
	for _, op := range ops {
		if op.Type == storage.Set && (c.m.failSets || (c.m.failPrefix != "" && strings.HasPrefix(op.Key, c.m.failPrefix))) {
			return errors.New("disk full")
		}
	}
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value = slices.Clone(c.m.keys[op.Key])
		case storage.Set:
			c.m.keys[op.Key] = slices.Clone(op.Value)
		case storage.Delete:
			delete(c.m.keys, op.Key)
		}
	}
	return nil
}

func (c memClient) Walk(_ context.Context, fn storage.WalkFunc) error {
	c.m.mu.Lock()
	keys := slices.Sorted(maps.Keys(c.m.keys))
	c.m.mu.Unlock()
	var ops []*storage.Operation
	for _, k := range keys {
		c.m.mu.Lock()
		v := slices.Clone(c.m.keys[k])
		c.m.mu.Unlock()
		more, err := fn(k, v)
		if err != nil {
			return err
		}
		ops = append(ops, more...)
	}
	return c.Batch(context.Background(), ops...)
}

func (memClient) Close(context.Context) error { return nil }

func (m *memStorage) count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

var storageID = component.MustNewIDWithName("file_storage", "gym")

type storageHost struct {
	component.Host
	ext extension.Extension
}

func (h storageHost) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{storageID: h.ext}
}

// crashHarness is a processor with storage that can be killed and started
// again on the same store, clock and sink.
type crashHarness struct {
	t      tb
	cfg    *Config
	store  *memStorage
	clock  *fakeClock
	sink   *consumertest.TracesSink
	next   consumer.Traces // when set, the processor's next instead of sink
	logger *zap.Logger
	tel    *componenttest.Telemetry // of the processor started last
	p      *gymProcessor
}

func newCrashHarness(t tb, cfg *Config) *crashHarness {
	return newCrashHarnessWithNext(t, cfg, nil)
}

func newCrashHarnessWithNext(t tb, cfg *Config, next consumer.Traces) *crashHarness {
	cfg.Storage = &storageID
	h := &crashHarness{t: t, cfg: cfg, store: newMemStorage(), clock: newFakeClock(), sink: new(consumertest.TracesSink), next: next, logger: zap.NewNop()}
	h.start()
	return h
}

func (h *crashHarness) start() {
	set := processortest.NewNopSettings(componentType)
	h.tel = componenttest.NewTelemetry()
	tel := h.tel
	h.t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	set.Logger = h.logger
	next := consumer.Traces(h.sink)
	if h.next != nil {
		next = h.next
	}
	p, err := newGymProcessorWithClock(set, h.cfg, next, h.clock)
	require.NoError(h.t, err)
	// The harness runs the timer's steps itself (tick, checkpointIfDue):
	// Start's goroutine reads the fake clock's channel, never fed here.
	require.NoError(h.t, p.startStorage(context.Background(), storageHost{Host: componenttest.NewNopHost(), ext: h.store}))
	h.p = p
}

// kill drops the processor as a SIGKILL would: no Shutdown.
func (h *crashHarness) kill() { h.p = nil }

func (h *crashHarness) consume(td ptrace.Traces) {
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

func (h *crashHarness) tickAt(d time.Duration) {
	h.clock.Advance(d)
	h.p.tick(context.Background())
}

// drain is what the engine emits at a shutdown now, as OTLP JSON; the
// journal is not told (a kill may follow).
func (h *crashHarness) drain() string {
	h.p.mu.Lock()
	r := h.p.eng.flush(h.clock.Now().UnixNano(), true)
	h.p.mu.Unlock()
	r.applyEdits(h.cfg.RolloutAttribute)
	r.assemble()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(r.out)
	require.NoError(h.t, err)
	return string(b)
}

func (h *crashHarness) pending() int {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	return h.p.eng.core.Pending()
}

// A span that had waited 4 s of a 5 s settle before the kill is decided
// about 1 s after the restart, not 5 s; the agent's early span of a long
// rollout, held across the restart, still learns its rollout.
func TestCrashResumesDeadlines(t *testing.T) {
	cfg := testConfig()
	h := newCrashHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
	early := pick(spans, "0-0/recv")
	h.consume(buildTraces(gymProcs, procOrder, []sdef{early}))
	h.tickAt(time.Second)
	// The rollout ends: POST /run and its other children arrive; POST /run
	// is an upward candidate with settle to go.
	var rest []sdef
	for _, s := range spans {
		if s.proc != "orchestrator" && s.id != early.id {
			rest = append(rest, s)
		}
	}
	h.consume(buildTraces(gymProcs, procOrder, rest))
	require.Equal(t, 3, h.pending(), "POST /run, its http receive and its http send wait for the upward decision")
	h.tickAt(4 * time.Second)
	require.Equal(t, 3, h.pending())
	delivered := h.sink.SpanCount()

	h.kill()
	h.clock.Advance(200 * time.Millisecond) // the restart
	h.start()
	require.Equal(t, 3, h.pending(), "what was held is held again")
	assert.Equal(t, delivered, h.sink.SpanCount(), "nothing delivered before the kill is delivered again")
	h.tickAt(500 * time.Millisecond)
	require.Equal(t, 3, h.pending(), "4.7 s of settle have passed")
	h.tickAt(500 * time.Millisecond)
	require.Equal(t, 1, h.pending(), "decided at settle from the spans' arrival, 1 s after the restart: POST /run's children left, POST /run waits for its parent")
	for _, s := range normalize(h.sink.AllTraces()) {
		assert.Equal(t, "0-0", s.Rollout, "%s (the early http receive too)", s.Name)
	}
	h.tickAt(cfg.Wait)
	require.Zero(t, h.pending(), "POST /run is cut from its parent, which never came")
	assert.Len(t, normalize(h.sink.AllTraces()), len(rest)+1, "every span once")
}

// The end of a run, a kill -9 before it (TestFullDisk/fill_kill_journal_apart
// saw it): the orchestrator's POST /run was recorded, the agent's batch with
// the spans below it was in flight and the agent's exporter retries it with
// backoff, and the orchestrator's gym.job comes first. The POST settled with
// nothing below it, and its parent left in no rollout: without a restart it
// would leave in none at once; within wait after the restart it waits, and
// takes its rollout upward when the retried batch comes.
func TestCrashSendersRetryAfterTheJobSpan(t *testing.T) {
	cfg := testConfig()
	h := newCrashHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
	orchestrator, agent := splitByProc(spans, "orchestrator")
	require.NotEmpty(t, orchestrator)
	h.consume(buildTraces(gymProcs, procOrder, orchestrator))
	h.kill()
	h.clock.Advance(500 * time.Millisecond)
	h.start()
	h.tickAt(cfg.Settle) // the POST's upward decision: nothing below it yet
	h.consume(buildTraces(gymProcs, procOrder, []sdef{jobSpan("job")}))
	h.tickAt(time.Second)
	require.Equal(t, len(orchestrator)+1, h.pending(), "the POST waits for the spans below it, the job span for its trace")
	h.consume(buildTraces(gymProcs, procOrder, agent)) // the agent's retry
	h.tickAt(cfg.Settle)
	require.Zero(t, h.pending())
	out := normalize(h.sink.AllTraces())
	require.Len(t, out, len(spans)+1, "every span once")
	for _, s := range out {
		want := "0-0"
		if s.Name == "gym.job" {
			want = ""
		}
		assert.Equal(t, want, s.Rollout, "%s %s", s.Service, s.Name)
	}
}

// The agent's POST /run, decided upward, waits for its parent (the
// orchestrator's HTTP POST) to know whether it is its rollout's root. The
// orchestrator's batch was refused by a collector killed again and again, and
// its sender's backoff brings it more than wait after the POST /run arrived,
// within wait after the last restart: the POST /run still hangs below it, and
// the rollout has one root (TestCrashKill9RotatingJournal/all, where 22 kills
// in 24 s cut 60 rollouts' POST /run from their HTTP POST).
func TestCrashRootWaitsForItsParentAfterARestart(t *testing.T) {
	cfg := testConfig()
	h := newCrashHarness(t, cfg)
	spans := rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
	orchestrator, agent := splitByProc(spans, "orchestrator")
	require.NotEmpty(t, orchestrator)
	h.consume(buildTraces(gymProcs, procOrder, agent))
	h.tickAt(cfg.Settle) // POST /run decided upward; its parent has not come
	require.Positive(t, h.pending(), "POST /run waits for its parent")
	h.tickAt(cfg.Wait / 2)
	h.kill()
	h.clock.Advance(500 * time.Millisecond)
	h.start()
	h.tickAt(cfg.Wait/2 + time.Second) // more than wait after POST /run arrived
	require.Positive(t, h.pending(), "POST /run still waits: the wait after the restart has not ended")
	h.consume(buildTraces(gymProcs, procOrder, append(orchestrator, jobSpan("job")))) // the orchestrator's retry
	h.tickAt(cfg.Settle)
	h.tickAt(cfg.Wait)
	require.Zero(t, h.pending())

	out := normalize(h.sink.AllTraces())
	byID := map[string]bool{}
	var roots []string
	for _, s := range out {
		byID[s.SpanID] = true
		if s.Rollout == "0-0" && s.Attributes[gymconv.RolloutRootAttribute] == true {
			roots = append(roots, s.Service+" "+s.Name)
		}
	}
	assert.Len(t, byID, len(spans)+1, "every span")
	require.Len(t, roots, 1, "one root: %v", roots)
	for _, s := range out {
		if s.Name == "POST /run" && s.Rollout == "0-0" {
			assert.NotEmpty(t, s.ParentID, "POST /run of %s hangs below the HTTP POST", s.Service)
		}
	}
}

// A re-dispatched attempt's root waiting for its previous attempt's root
// (phaseAttempt) is held again after a kill -9, still waiting for it, and
// links to it when it comes.
func TestCrashAttemptRootKeepsWaitingForItsPrevious(t *testing.T) {
	cfg := coreConfig()
	h := newCrashHarness(t, cfg)
	early, late := firstAttemptLast(t)
	total := early.SpanCount() + late.SpanCount()
	h.consume(early)
	h.tickAt(cfg.Wait) // the later attempts' roots are decided; 12-3-a1's waits
	require.Equal(t, 1, h.pending(), "12-3-a1's root waits for 12-3's")
	h.kill()
	h.start()
	require.Equal(t, 1, h.pending(), "and waits again after the restart")
	h.consume(late)
	h.tickAt(cfg.Settle)
	h.tickAt(cfg.Wait)
	require.Zero(t, h.pending())
	linked := false
	ids := map[string]bool{} // a round delivered before its mark is delivered again (a kill -9 duplicates, never loses)
	for _, s := range normalize(h.sink.AllTraces()) {
		ids[s.SpanID] = true
		if s.Rollout == "12-3-a1" && s.Attributes[gymconv.RolloutRootAttribute] == true {
			for _, l := range s.Links {
				linked = linked || l.Attributes["nemo.gym.link.type"] == "previous_attempt"
			}
		}
	}
	assert.True(t, linked, "12-3-a1's root links to 12-3's")
	assert.Len(t, ids, total, "every span")
}

// Kill the processor at a random point of a random run, maybe between a
// round's delivery and its mark (written with the next record, or removed
// here), restart it on the same store, finish the run: every span leaves, as
// it would without the kill; a span leaves twice only from rounds whose
// marks had not been written. The restart's one rule of its own (the wait
// after a restart, design §4.6) is applied at the same point of the run
// without the kill, so that the two are compared on everything else.
func TestPropertyKillAndRestartLosesNothing(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		spans := genForest(rt, false)
		batches := drawPlan(rt, buildForest(spans))
		evs := drawSchedule(rt, cfg, batches)
		kill := rapid.IntRange(0, len(evs)).Draw(rt, "killAfter")
		unmarked := rapid.Bool().Draw(rt, "killBeforeTheMark")

		mayRepeat := false
		run := func(killAt, restartAt int) (map[int64][]outcome, int) {
			h := newCrashHarness(rt, cfg)
			base := h.clock.Now().UnixNano()
			for i, ev := range evs {
				if i == restartAt && i != killAt && i > 0 {
					h.p.restarted(context.Background()) // what the restart after a kill here records
				}
				if i == killAt {
					// Rounds delivered since the last record have their
					// marks pending: they come again after the restart.
					mayRepeat = unmarked || h.p.jr.pendingMarks() > 0
					if unmarked && i > 0 {
						h.store.mu.Lock()
						for k := range h.store.keys {
							if strings.Contains(k, "/d/") && strings.HasSuffix(k, hex16(h.p.applied)) {
								delete(h.store.keys, k) // the round was delivered, its mark not written
							}
						}
						h.store.mu.Unlock()
					}
					h.kill()
					h.start()
				}
				if d := time.Duration(ev.at - base - (h.clock.Now().UnixNano() - base)); d > 0 {
					h.clock.Advance(d)
				}
				if ev.tick {
					h.p.tick(context.Background())
				} else {
					h.consume(copyTraces(ev.batch))
				}
			}
			h.clock.Advance(3 * time.Hour)
			h.p.tick(context.Background())
			require.NoError(rt, h.p.Shutdown(context.Background()))
			require.Zero(rt, h.store.count("g"), "an orderly shutdown leaves an empty journal")
			got := map[int64][]outcome{}
			for _, td := range h.sink.AllTraces() {
				forEachSpan(td, func(_ pcommon.Resource, s ptrace.Span) {
					if isSynthetic(s.Attributes()) {
						return
					}
					v, _ := s.Attributes().Get(idxAttr)
					o := outcome{trace: s.TraceID().String(), parent: s.ParentSpanID().String()}
					if r, ok := s.Attributes().Get("nemo.gym.rollout.id"); ok {
						o.rollout = r.AsString()
					}
					got[v.Int()] = append(got[v.Int()], o)
				})
			}
			return got, h.sink.SpanCount()
		}
		want, _ := run(-1, kill)
		got, _ := run(kill, -1)
		require.Len(rt, got, len(spans), "every span leaves")
		for i, w := range want {
			g := got[i]
			require.NotEmpty(rt, g, "span %d lost", i)
			require.Equal(rt, w[0], g[0], "span %d as without the kill", i)
			if len(g) > 1 {
				require.True(rt, mayRepeat, "span %d left twice, but every delivered round was marked", i)
				for _, again := range g[1:] {
					require.Equal(rt, w[0], again, "span %d left again the same", i)
				}
			}
		}
	})
}

func hex16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[:])
}

// The store stays bounded: a checkpoint replaces the records before it.
func TestCheckpointBoundsTheJournal(t *testing.T) {
	cfg := testConfig()
	h := newCrashHarness(t, cfg)
	td := readTraces(t, "../../testdata/default_preset_3_rollouts/input.json")
	for range 20 {
		h.consume(copyTraces(td))
		h.tickAt(time.Second)
	}
	require.Equal(t, 40, h.store.count("g1/r/"))
	h.clock.Advance(checkpointEvery)
	h.p.checkpointIfDue(context.Background())
	assert.Zero(t, h.store.count("g1/r/"), "records before the checkpoint are deleted")
	assert.Zero(t, h.store.count("g1/d/"))
	assert.Equal(t, 1, h.store.count("g1/c/"))
	// A kill now recovers from the checkpoint alone.
	held := h.pending()
	h.kill()
	h.start()
	assert.Equal(t, held, h.pending())
}

// A fresh journal's first checkpoint comes checkpointEvery after the start,
// not at its first tick (which would snapshot whatever the first load
// brought in); after a restart that replayed records, the first tick folds
// them into a checkpoint.
func TestFirstCheckpointIsDueAfterItsInterval(t *testing.T) {
	h := newCrashHarness(t, testConfig())
	td := readTraces(t, "../../testdata/default_preset_3_rollouts/input.json")
	h.consume(copyTraces(td))
	h.tickAt(time.Second)
	h.p.checkpointIfDue(context.Background())
	require.Zero(t, h.store.count("g1/c/"), "no checkpoint at the first tick of a fresh journal")
	require.Equal(t, 2, h.store.count("g1/r/"))
	h.clock.Advance(checkpointEvery)
	h.p.checkpointIfDue(context.Background())
	require.Equal(t, 1, h.store.count("g1/c/"), "a checkpoint once checkpointEvery has passed")
	require.Zero(t, h.store.count("g1/r/"))

	h.consume(copyTraces(td))
	h.kill()
	h.start()
	require.Equal(t, 2, h.store.count("g1/r/"), "the record after the checkpoint, replayed, and the restart's")
	h.tickAt(time.Second)
	h.p.checkpointIfDue(context.Background())
	assert.Zero(t, h.store.count("g1/r/"), "the first tick after a replay folds the replayed records away")
}

// Corrupt or foreign content is reported and set aside, never a crash loop:
// a record whose bytes changed, a checkpoint cut short, a journal written by
// another configuration.
func TestCorruptOrForeignStorageIsSetAside(t *testing.T) {
	prime := func(t *testing.T, checkpoint bool) *crashHarness {
		h := newCrashHarness(t, testConfig())
		spans := rolloutSpans("0-0", rolloutOpts{obs: true, hParent: "job", trace: "job"})
		h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/recv")}))
		if checkpoint {
			h.clock.Advance(checkpointEvery)
			h.p.checkpointIfDue(context.Background())
		}
		h.consume(buildTraces(gymProcs, procOrder, []sdef{pick(spans, "0-0/send")}))
		require.Equal(t, 2, h.pending())
		return h
	}
	restart := func(t *testing.T, h *crashHarness) *observer.ObservedLogs {
		core, logs := observer.New(zap.WarnLevel)
		h.logger = zap.New(core)
		h.kill()
		h.start() // must not fail: the collector starts
		return logs
	}
	t.Run("a record's bytes changed", func(t *testing.T) {
		h := prime(t, false)
		h.store.mu.Lock()
		k := "g1/r/" + hex16(2)
		h.store.keys[k][len(h.store.keys[k])/2] ^= 0xff
		h.store.mu.Unlock()
		logs := restart(t, h)
		require.Len(t, logs.FilterMessageSnippet("corrupt").All(), 1, "reported: %v", logs.All())
		assert.Equal(t, 1, h.pending(), "the record before the corrupt one was recovered")
		assert.Equal(t, uint64(2), h.p.jr.meta.Generation, "a new generation")
		assert.Equal(t, uint64(1), h.p.jr.meta.Aside, "the old one set aside")
		assert.Equal(t, 1, h.store.count("g1/r/"+hex16(2)), "kept for inspection")
		// The recovered state is durable in the new generation.
		h.kill()
		h.start()
		assert.Equal(t, 1, h.pending())
	})
	t.Run("a checkpoint cut short", func(t *testing.T) {
		h := prime(t, true)
		h.store.mu.Lock()
		for k, v := range h.store.keys {
			if strings.HasPrefix(k, "g1/c/") {
				h.store.keys[k] = v[:len(v)/2]
			}
		}
		h.store.mu.Unlock()
		logs := restart(t, h)
		require.NotEmpty(t, logs.FilterMessageSnippet("corrupt").All(), "reported: %v", logs.All())
		assert.Zero(t, h.pending(), "nothing can be replayed without its checkpoint")
		assert.Equal(t, uint64(1), h.p.jr.meta.Aside)
	})
	t.Run("records of another configuration", func(t *testing.T) {
		h := prime(t, false)
		h.cfg = testConfig()
		h.cfg.Settle = 7 * time.Second
		h.cfg.Storage = &storageID
		logs := restart(t, h)
		require.Len(t, logs.FilterMessageSnippet("another configuration").All(), 1, "reported: %v", logs.All())
		assert.Zero(t, h.pending())
		var meta journalMeta
		h.store.mu.Lock()
		require.NoError(t, json.Unmarshal(h.store.keys[metaKey], &meta))
		h.store.mu.Unlock()
		assert.Equal(t, uint64(1), meta.Aside)
		assert.Contains(t, meta.AsideWhy, `"Settle":5000000000`, "the log and the header say which configuration wrote it")
	})
	t.Run("a header that is not JSON", func(t *testing.T) {
		h := prime(t, false)
		h.store.mu.Lock()
		h.store.keys[metaKey] = []byte("\x00garbage")
		h.store.mu.Unlock()
		logs := restart(t, h)
		require.NotEmpty(t, logs.All())
		assert.Zero(t, h.pending())
	})
}

// A batch the storage cannot record is refused, whole: the sender retries it.
func TestStorageFailureRefusesTheBatch(t *testing.T) {
	h := newCrashHarness(t, testConfig())
	h.store.failSets = true
	err := h.p.ConsumeTraces(context.Background(), readTraces(t, "../../testdata/default_preset_3_rollouts/input.json"))
	require.ErrorContains(t, err, "disk full")
	assert.Zero(t, h.sink.SpanCount())
	assert.Zero(t, h.pending())
	h.store.failSets = false
	h.consume(readTraces(t, "../../testdata/default_preset_3_rollouts/input.json"))
	assert.NotZero(t, h.sink.SpanCount())
	assert.Equal(t, 1, h.store.count("g1/r/0000000000000001"), "the refused batch took no sequence")
	assert.Equal(t, 1, h.store.count("g1/r/"))
}

// Callers that arrive while a record is being written share the next
// transaction (a group commit), and the engine takes their batches in the
// order of their sequence: the journal then replays to exactly the state the
// live engine reached.
func TestConcurrentBatchesShareACommitAndReplayExactly(t *testing.T) {
	h := newCrashHarness(t, testConfig())
	batches := splitTraces(readTraces(t, "../../testdata/default_preset_3_rollouts/input.json"), 3)
	require.Greater(t, len(batches), 4)
	var total int
	for _, b := range batches {
		total += b.SpanCount()
	}
	gate := make(chan struct{})
	h.store.mu.Lock()
	h.store.gate = gate
	h.store.mu.Unlock()

	var wg sync.WaitGroup
	consume := func(td ptrace.Traces) {
		defer wg.Done()
		assert.NoError(t, h.p.ConsumeTraces(context.Background(), td))
	}
	wg.Add(len(batches))
	go consume(batches[0])
	<-gate // the first batch's transaction has begun; it is held
	for _, b := range batches[1:] {
		go consume(b)
	}
	queued := func() int {
		h.p.jr.qmu.Lock()
		defer h.p.jr.qmu.Unlock()
		return len(h.p.jr.queue)
	}
	require.Eventually(t, func() bool { return queued() == len(batches)-1 }, 10*time.Second, time.Millisecond)
	h.store.mu.Lock()
	h.store.gate = nil
	h.store.mu.Unlock()
	<-gate // the first transaction goes on; the second, with every other batch, is not gated
	wg.Wait()

	assert.Equal(t, 2, h.store.recordBatches, "the batches queued behind the first share one transaction")
	assert.Equal(t, len(batches), h.store.count("g1/r/"))
	assert.Equal(t, uint64(len(batches)), h.p.applied)
	assert.Equal(t, total, h.sink.SpanCount()+h.pending(), "every span left or is held")
	require.NotZero(t, h.pending(), "spans are held: the replay has state to rebuild")
	live := h.drain()
	h.kill()
	h.start()
	assert.Equal(t, live, h.drain(), "the journal replays to the live state: at shutdown both emit the same")
}

func TestStorageExtensionMissingIsAConfigError(t *testing.T) {
	cfg := testConfig()
	cfg.Storage = &storageID
	p, err := newGymProcessorWithClock(processortest.NewNopSettings(componentType), cfg, new(consumertest.TracesSink), newFakeClock())
	require.NoError(t, err)
	err = p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, `extension "file_storage/gym" is not in the service's extensions`)
}

// After a kill, a sender retries the batches the dead collector recorded
// but never acknowledged. The copies of spans the restarted processor holds
// again (from its journal) leave with the held copy, as it is rewritten
// (resent.go); copies of spans that had already left go on at once, with the
// rollout their first copy left with. Every span leaves as often as it came,
// and by span id the output is the run's without the kill. Without that, a
// held span's copy left first, in no rollout, and gymspans kept that copy
// (it keeps the first).
func TestResentSpansLeaveWithTheirRollout(t *testing.T) {
	batches := splitTraces(readTraces(t, "../../testdata/default_preset_3_rollouts/input.json"), 3)
	require.Greater(t, len(batches), 4)
	half := len(batches) / 2
	clone := func(td ptrace.Traces) ptrace.Traces {
		c := ptrace.NewTraces()
		td.CopyTo(c)
		return c
	}
	sent := 0
	run := func(kill bool) (*crashHarness, []normSpan) {
		h := newCrashHarness(t, testConfig())
		for _, b := range batches[:half] {
			h.consume(clone(b))
			sent += b.SpanCount()
		}
		if kill {
			require.NotZero(t, h.pending(), "spans are held at the kill")
			h.kill()
			h.start()
			for _, b := range batches[:half] { // the sender's retry
				h.consume(clone(b))
				sent += b.SpanCount()
			}
		}
		for _, b := range batches[half:] {
			h.consume(clone(b))
			sent += b.SpanCount()
		}
		h.tickAt(time.Hour)
		return h, normalize(h.sink.AllTraces())
	}
	_, want := run(false)
	sent = 0
	h, got := run(true)
	require.Zero(t, h.pending())
	redelivered, err := h.tel.GetMetric("otelcol_processor_gym_spans_redelivered")
	var again int
	if err == nil {
		again = int(sumPoints(redelivered.Data, nil))
	}
	assert.Len(t, got, sent+again, "every span leaves as often as it was sent, plus those the restart handed on again (design §4.6)")

	first := map[string]normSpan{}
	var once []normSpan
	for _, s := range got {
		if f, seen := first[s.SpanID]; seen {
			assert.Equal(t, f.Rollout, s.Rollout, "span %s %q: a second copy in another rollout", s.SpanID, s.Name)
			assert.Equal(t, f.TraceID, s.TraceID, "span %s %q: a second copy in another trace", s.SpanID, s.Name)
			continue
		}
		first[s.SpanID] = s
		once = append(once, s)
	}
	assert.Equal(t, want, once, "by span id, the output is the run's without the kill")
	m, err := h.tel.GetMetric("otelcol_processor_gym_resent_spans")
	require.NoError(t, err, "copies of held spans were sent again")
	assert.NotZero(t, sumPoints(m.Data, nil))
}
