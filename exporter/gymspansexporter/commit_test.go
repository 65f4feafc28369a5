// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
)

// gatedDisk holds the first write until released, passes the first push's
// remaining writes (first files of them), and then applies the faults and
// counts the writev calls per file: those are the grouped pushes' writes.
type gatedDisk struct {
	faultyDisk
	firstFiles int
	entered    chan struct{}
	release    chan struct{}
	mu         sync.Mutex
	n          int
	calls      map[string]int
	only       string // when set, only writes to this file are gated and counted
}

func (d *gatedDisk) write(name string, fd int, iovs [][]byte) (int, error) {
	d.mu.Lock()
	if d.only != "" && name != d.only {
		d.mu.Unlock()
		return d.faultyDisk.write(name, fd, iovs)
	}
	d.n++
	n := d.n
	if n > d.firstFiles {
		d.calls[name]++
	}
	d.mu.Unlock()
	if n == 1 {
		close(d.entered)
		<-d.release
	}
	if n <= d.firstFiles {
		return capturedir.Writev(name, fd, iovs)
	}
	return d.faultyDisk.write(name, fd, iovs)
}

// otlpSpanIDsIn returns how many times each span id occurs in an OTLP/JSON
// lines file.
func otlpSpanIDsIn(t testing.TB, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	var u ptrace.JSONUnmarshaler
	for _, l := range readLines(t, path) {
		td, err := u.UnmarshalTraces([]byte(l))
		require.NoError(t, err, l)
		for id := range countSpans(td) {
			out[id]++
		}
	}
	return out
}

// otlpPlacesIn maps each span id in an OTLP/JSON file to the resource and
// scope it is written in.
func otlpPlacesIn(t testing.TB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var u ptrace.JSONUnmarshaler
	for _, l := range readLines(t, path) {
		td, err := u.UnmarshalTraces([]byte(l))
		require.NoError(t, err, l)
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				place := fmt.Sprintf("resource %v (%s), scope %s %s (%s)", rs.Resource().Attributes().AsRaw(), rs.SchemaUrl(),
					ss.Scope().Name(), ss.Scope().Version(), ss.SchemaUrl())
				for k := 0; k < ss.Spans().Len(); k++ {
					out[ss.Spans().At(k).SpanID().String()] = place
				}
			}
		}
	}
	return out
}

// counted returns the writev calls counted per file.
func (d *gatedDisk) counted() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.calls {
		out[k] = v
	}
	return out
}

// TestGroupCommit holds one push inside its first write while four more
// queue behind it, then checks that the four were written with one append
// per file between them, that every span is in every file exactly once,
// and that a failed file fails exactly its spans in each of the grouped
// pushes (and a retry then completes them). With the combined file the
// pushes write only it (the rollout files and rollouts.jsonl follow from
// memory); with combined_file "" they write every file.
func TestGroupCommit(t *testing.T) {
	for _, tc := range []struct {
		name, combined, full string
	}{
		{"journal", "spans.jsonl", ""},
		{"journal/full=spans.jsonl", "spans.jsonl", "spans.jsonl"},
		{"write-through", "", ""},
		{"write-through/full=0-1.spans.jsonl", "", "0-1.spans.jsonl"},
		{"write-through/full=rollouts.jsonl", "", "rollouts.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := func(td ptrace.Traces) map[string]map[string]int {
				f := expectedFiles(td)
				if tc.combined == "" {
					delete(f, "spans.jsonl")
				}
				return f
			}
			// The pushes write: with the combined file only it, else every file.
			pushed := func(td ptrace.Traces) map[string]map[string]int {
				if tc.combined != "" {
					return map[string]map[string]int{"spans.jsonl": files(td)["spans.jsonl"]}
				}
				return files(td)
			}
			disk := &gatedDisk{
				firstFiles: len(pushed(gymTraces(100, 8, 5))),
				entered:    make(chan struct{}), release: make(chan struct{}), calls: map[string]int{},
			}
			disk.set([]string{tc.full}, nil)
			e, _ := newTestExporter(t, func(c *Config) { c.CombinedFile = tc.combined; c.FlushInterval = time.Hour })
			e.write = disk.write
			queued := make(chan int, 8)
			e.commits.queued = func(n int) { queued <- n }
			startExporter(t, e)
			// Only the pushes' writes are counted (not the flusher's).
			disk.only = tc.combined

			const pushes = 5
			want := map[string]map[string]int{}
			errs := make([]error, pushes)
			var wg sync.WaitGroup
			push := func(i int) {
				defer wg.Done()
				errs[i] = e.pushTraces(context.Background(), gymTraces(uint64(100+i), 8, 5))
			}
			for i := 0; i < pushes; i++ {
				for f, ids := range files(gymTraces(uint64(100+i), 8, 5)) {
					if want[f] == nil {
						want[f] = map[string]int{}
					}
					for id := range ids {
						want[f][id] = 1
					}
				}
			}
			wg.Add(1)
			go push(0)
			<-disk.entered
			for i := 1; i < pushes; i++ {
				wg.Add(1)
				go push(i)
			}
			for n := 0; n < pushes-1; {
				n = <-queued
			}
			close(disk.release)
			wg.Wait()

			// The four queued pushes: one writev per file they share.
			for f, n := range disk.counted() {
				assert.Equal(t, 1, n, "writev calls for %s by the grouped pushes", f)
			}
			assert.Len(t, disk.counted(), len(pushed(gymTraces(101, 8, 5))), "every file of the group is appended to")

			var back []map[string]bool
			for i, err := range errs {
				if tc.full == "" {
					require.NoError(t, err, "push %d", i)
					continue
				}
				if i == 0 {
					require.NoError(t, err, "the first push is written before the fault")
					continue
				}
				require.ErrorIs(t, err, unix.ENOSPC, "push %d", i)
				var perr consumererror.Traces
				require.ErrorAs(t, err, &perr)
				wantBack := map[string]bool{}
				for sid := range files(gymTraces(uint64(100+i), 8, 5))[tc.full] {
					wantBack[sid] = true
				}
				assert.Equal(t, wantBack, countSpans(perr.Data()), "push %d carries back exactly its spans of %s", i, tc.full)
				back = append(back, countSpans(perr.Data()))
				disk.set(nil, nil)
				require.NoError(t, e.pushTraces(context.Background(), perr.Data()))
			}
			if tc.full != "" {
				assert.Len(t, back, pushes-1)
			}
			if tc.combined != "" {
				flushFiles(t, e)
			}
			assertExactlyOnce(t, e.cfg.CaptureDir, want)
			assert.Zero(t, e.retry.Len())
		})
	}
}

// TestConcurrentPushes writes from eight goroutines at once, as receivers
// do (grouped or not, as the scheduler has it), with only four descriptors:
// every span is once in every file, and every line parses.
func TestConcurrentPushes(t *testing.T) {
	for _, format := range []string{formatConsole, formatOTLPJSON} {
		t.Run(format, func(t *testing.T) {
			// Four descriptors for the files (and three for the journal index).
			e, _ := newTestExporter(t, func(c *Config) { c.Format = format; c.MaxOpenFiles = 4 + 3 })
			startExporter(t, e)
			want := map[string]map[string]int{}
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				for r := 0; r < 10; r++ {
					td := gymTraces(uint64(1000+g*100+r), 6, 4)
					for f, ids := range expectedFiles(td) {
						if want[f] == nil {
							want[f] = map[string]int{}
						}
						for id := range ids {
							want[f][id] = 1
						}
					}
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < 10; r++ {
						assert.NoError(t, e.pushTraces(context.Background(), gymTraces(uint64(1000+g*100+r), 6, 4)))
					}
				}()
			}
			wg.Wait()
			flushFiles(t, e)
			if format == formatConsole {
				assertExactlyOnce(t, e.cfg.CaptureDir, want)
				return
			}
			for f, ids := range want {
				if f == "rollouts.jsonl" {
					assert.Equal(t, ids, spanIDsIn(t, e.cfg.CaptureDir+"/"+f), f)
					continue
				}
				assert.Equal(t, ids, otlpSpanIDsIn(t, e.cfg.CaptureDir+"/"+f), f)
			}
		})
	}
}

// TestAfterGroupBeforeWake checks that the writer runs afterGroup (the file
// store's lock give-back, a syscall per lock) before it wakes the other
// pushes of its group: a syscall made while they wait in the writer's run
// queue lets the Go runtime hand the writer's P to another thread.
func TestAfterGroupBeforeWake(t *testing.T) {
	g := &groupCommit{}
	// A push queued behind a writer that is gone: nobody receives its
	// wake-up, so the buffered channel shows whether it was sent yet.
	other := &batch{wake: make(chan bool, 1)}
	g.queue = []*batch{other}
	woken := -1
	g.afterGroup = func() { woken = len(other.wake) }
	writer := &batch{wake: make(chan bool, 1)}
	g.commit(writer, func([]*batch) {})
	assert.Equal(t, 0, woken, "the group's other push was woken before afterGroup ran")
	require.Len(t, other.wake, 1)
	assert.False(t, <-other.wake, "the other push is told it was written, not to become the writer")
	assert.False(t, g.writing, "the write token is given back when nothing is queued")
}
