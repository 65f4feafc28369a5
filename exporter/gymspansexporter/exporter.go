// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/bounded"
)

// spansExporter is the exporter's glue: its state, Start, Shutdown and
// pushTraces (the data flow is drawn in doc.go).
//
// Encoding and the bookkeeping after the write hold mu (the retry and
// rollout tables need no other lock); the appends do not: concurrent pushes
// are written together by groupCommit, one append per file. Nothing is
// queued in memory beyond the pushes in flight: when ConsumeTraces returns
// nil, every line of its batch is in the kernel (a kill -9 loses none); the
// flusher fsyncs. Partial failure and the retry table: retry.go.
type spansExporter struct {
	cfg     *Config
	keys    attrKeys
	logger  *zap.Logger
	logs    *logLimiter
	metrics *exporterMetrics
	tmpl    *pathTemplate
	rot     *rotation
	otlp    bool
	// markedRoots: rollouts.jsonl takes the spans the gym processor marked
	// as roots (rollout_roots, resolved at start).
	markedRoots bool
	write       sysWrite
	filePerm    os.FileMode
	dirPerm     os.FileMode

	// observers see every span once it is written; the service-map writer
	// (service_map.*) plugs in here.
	observers []spanObserver

	commits  groupCommit
	inflight sync.WaitGroup // pushes past encoding; shutdown waits for them
	active   atomic.Int32   // pushes in pushTraces; the last out calls store.idle

	mu      sync.Mutex
	store   *fileStore
	free    []*batch                              // batches to reuse
	retry   *bounded.Table[[24]byte, []string]    // span → files already holding its line
	errs    *bounded.Table[[2]string, int]        // (run, rollout) → ERROR spans seen
	names   *bounded.Table[[2]string, nameResult] // (run, rollout) → rendered file name
	stop    chan struct{}
	stopped chan struct{}
}

// spanObserver is told about every span written, and flushed with the files.
type spanObserver interface {
	observe(res pcommon.Resource, span ptrace.Span)
	flush() error
	shutdown() error
}

const (
	maxRetrySpans      = 1 << 17
	maxTrackedRollouts = 1 << 17
	maxCachedNames     = 1 << 14
)

// nameResult is a rendered per-rollout file name, or why there is none.
type nameResult struct{ name, reason string }

func newSpansExporter(set exporter.Settings, cfg *Config) (*spansExporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gymspans exporter: %w", err)
	}
	logs := newLogLimiter(set.Logger, time.Minute)
	m, err := newExporterMetrics(set.TelemetrySettings, logs)
	if err != nil {
		return nil, fmt.Errorf("gymspans exporter: metrics: %w", err)
	}
	filePerm, _ := parsePerm(cfg.FilePermissions)
	dirPerm, _ := parsePerm(cfg.DirectoryPermissions)
	tmpl := newPathTemplate(cfg.PathTemplate, cfg.CombinedFile, cfg.RolloutsFile, cfg.ServiceMap.JSONFile, cfg.ServiceMap.MarkdownFile)
	tmpl.rotated = cfg.CombinedFile
	return &spansExporter{
		cfg:      cfg,
		keys:     keysOf(cfg),
		logger:   set.Logger,
		logs:     logs,
		metrics:  m,
		tmpl:     tmpl,
		rot:      &rotation{maxBytes: int64(cfg.Rotation.MaxMegabytes) << 20, maxBackups: cfg.Rotation.MaxBackups},
		otlp:     cfg.Format == formatOTLPJSON,
		write:    writeSeam(),
		filePerm: filePerm,
		dirPerm:  dirPerm,
		retry:    bounded.New[[24]byte, []string](maxRetrySpans),
		errs:     bounded.New[[2]string, int](maxTrackedRollouts),
		names:    bounded.New[[2]string, nameResult](maxCachedNames),
	}, nil
}

func (e *spansExporter) start(context.Context, component.Host) error {
	if err := ensureDir(e.cfg.CaptureDir, e.dirPerm); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	if err := checkWritable(e.cfg.CaptureDir); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	store, err := openFileStore(e.cfg.CaptureDir, e.filePerm, e.cfg.MaxOpenFiles, e.metrics)
	if err != nil {
		return fmt.Errorf("gymspans exporter: %w", err)
	}
	store.write = e.write
	store.startHolding(e.cfg.LockHold, e.commits.whenIdle)
	e.commits.afterGroup = func() { store.expireKept(time.Now()) }
	if e.cfg.ServiceMap.Enabled && len(e.observers) == 0 {
		sm, err := newServiceMapObserver(e.cfg, e.logger)
		if err != nil {
			_ = store.close()
			return fmt.Errorf("gymspans exporter: %w", err)
		}
		e.observers = append(e.observers, sm)
	}
	marked := marksRoots(e.cfg.RolloutRoots)
	if e.cfg.RolloutsFile != "" {
		rule := "a parentless span with a rollout id"
		if marked {
			rule = "the span the gym processor marked " + gymconv.RolloutRootAttribute
		} else if e.cfg.RolloutRoots == rootsAuto {
			rule += " (no gym processor in this collector)"
		}
		e.logger.Info("rollouts.jsonl: a rollout's root is "+rule, zap.String("rollout_roots", e.cfg.RolloutRoots))
	}
	e.mu.Lock()
	e.markedRoots = marked
	e.store = store
	e.stop = make(chan struct{})
	e.stopped = make(chan struct{})
	e.mu.Unlock()
	go e.flushLoop(store, e.stop, e.stopped)
	return nil
}

// flushLoop fsyncs what was written, at most every flush_interval.
func (e *spansExporter) flushLoop(store *fileStore, stop <-chan struct{}, stopped chan<- struct{}) {
	tickUntil(e.cfg.FlushInterval, stop, stopped, func() {
		_ = store.flush() // failures are counted and logged by the store
		for _, o := range e.observers {
			if err := o.flush(); err != nil {
				e.logs.warn("observer", "flush failed", zap.Error(err))
			}
		}
	})
}

// tickUntil calls f every d until stop is closed, then closes stopped.
func tickUntil(d time.Duration, stop <-chan struct{}, stopped chan<- struct{}, f func()) {
	defer close(stopped)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

func (e *spansExporter) shutdown(context.Context) error {
	e.mu.Lock()
	store, stop, stopped := e.store, e.stop, e.stopped
	e.store = nil
	e.mu.Unlock()
	if store == nil {
		return nil
	}
	e.inflight.Wait()
	close(stop)
	<-stopped
	var errs []error
	for _, o := range e.observers {
		errs = append(errs, o.shutdown())
	}
	errs = append(errs, store.close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gymspans exporter: shutdown: %w", err)
	}
	return nil
}

func (e *spansExporter) pushTraces(_ context.Context, td ptrace.Traces) error {
	e.mu.Lock()
	store := e.store
	if store == nil {
		e.mu.Unlock()
		return errors.New("gymspans exporter: not started")
	}
	var b *batch
	if n := len(e.free); n > 0 {
		b, e.free = e.free[n-1], e.free[:n-1]
	} else {
		b = &batch{wake: make(chan bool, 1)}
	}
	e.active.Add(1)
	defer func() {
		if e.active.Add(-1) == 0 {
			store.idle()
		}
	}()
	e.encode(b, td)
	e.encodeRoots(b, td)
	e.inflight.Add(1)
	e.mu.Unlock()
	defer e.inflight.Done()

	e.commits.commit(b, store.appendLines, e.rotationOf)

	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.finishBatch(b, td)
	b.reset()
	e.free = append(e.free, b)
	return err
}

// rotationOf is the rotation of a file kind (only the combined file rotates).
func (e *spansExporter) rotationOf(kind string) *rotation {
	if kind == fileKindCombined {
		return e.rot
	}
	return nil
}

// observe hands the spans whose lines are now in every file to the
// observers (a span that failed before is observed when its retry succeeds).
func (e *spansExporter) observe(b *batch, td ptrace.Traces) {
	if len(e.observers) == 0 {
		return
	}
	for idx, ref := range b.refs {
		if len(b.failed) > 0 && b.failed[idx] {
			continue
		}
		rs := td.ResourceSpans().At(int(ref.rs))
		span := rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp))
		for _, o := range e.observers {
			o.observe(rs.Resource(), span)
		}
	}
}

// testSeam replaces write(2) in tests that build the exporter through the
// factory.
var testSeam sysWrite

func writeSeam() sysWrite {
	if testSeam != nil {
		return testSeam
	}
	return defaultWrite
}

// ensureDir creates a missing capture dir with perm (not subject to umask).
func ensureDir(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%q is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return os.Chmod(dir, perm)
}

// checkWritable creates and removes a probe file in dir, so that a capture
// dir we cannot write (permissions, a read-only mount) fails Start
// instead of every export.
func checkWritable(dir string) error {
	probe, err := os.CreateTemp(dir, ".otelcol-gym-probe-*")
	if err != nil {
		return fmt.Errorf("%q cannot be written: %w", dir, err)
	}
	name := probe.Name()
	_ = probe.Close()
	return os.Remove(name)
}
