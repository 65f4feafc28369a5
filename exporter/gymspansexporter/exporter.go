// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"

import (
	"github.com/otelcol-gym/otelcol-gym/internal/credentials"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/internal/bounded"

	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/pending"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"
	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// spansExporter is the exporter's glue: its state, Start, Shutdown and
// pushTraces (the data flow is drawn in doc.go).
//
// Concurrent pushes claim their spans (internal/dedup) and encode in parallel;
// the group writer (commit.go) then writes the batches that queued
// together, one append per file. With the combined file (journal mode) the
// writer appends only the combined file, records the append in the journal
// index and hands the rollout lines to the pending store, which the flusher
// writes out (flusher.go); with combined_file "" (write-through) it appends
// every file. Partial failure and the retry table: retry.go.
type spansExporter struct {
	cfg     *Config
	keys    attrKeys
	logger  *zap.Logger
	logs    *logLimiter
	metrics *exporterMetrics
	tmpl    *capturedir.Template
	rot     *capturedir.Rotation
	otlp    bool
	// creds is the credentials rule, credLog names each key it removes once.
	creds   *credentials.Rule
	credLog *credentials.Log
	// markedRoots: rollouts.jsonl takes the spans the gym processor marked
	// as roots (rollout_roots, resolved at start).
	markedRoots bool
	write       capturedir.WriteFunc
	syncfsAbove int // the store's syncfs threshold (0: its default); tests set it
	filePerm    os.FileMode
	dirPerm     os.FileMode

	// sm keeps service_map.json and service_map.md (nil when off).
	sm *serviceMapObserver

	commits  groupCommit
	inflight sync.WaitGroup // pushes past encoding; shutdown waits for them
	active   atomic.Int32   // pushes in pushTraces; the last out calls store.idle

	dedup *dedup.Window // nil with dedup_window_spans 0

	// Journal mode (set at start when combined_file is on).
	journal *journal.Index
	pending *pending.Store

	// errs is the group writer's: (run, rollout) → ERROR spans written.
	errs *bounded.Table[[2]string, int]
	// split writes time_split_ms (nil when off).
	split *rolloutSplits

	names *capturedir.NameCache // (run, rollout) → rendered file name
	retry *retryTable           // write-through: span → files already holding its line
	free  batchPool             // batches to reuse

	mu      sync.Mutex // guards the started state: store, flusher, writer
	store   *capturedir.Store
	flusher *flusher
	writer  groupWriter // picked at start for the configuration
}

const (
	maxRetrySpans      = 1 << 17
	maxTrackedRollouts = 1 << 17
	maxCachedNames     = 1 << 14
)

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
	tmpl := capturedir.NewTemplate(cfg.PathTemplate, cfg.CombinedFile, cfg.CombinedFile, cfg.RolloutsFile, cfg.ServiceMap.JSONFile, cfg.ServiceMap.MarkdownFile)
	return &spansExporter{
		cfg:      cfg,
		keys:     keysOf(cfg),
		logger:   set.Logger,
		logs:     logs,
		metrics:  m,
		tmpl:     tmpl,
		rot:      &capturedir.Rotation{MaxBytes: int64(cfg.Rotation.MaxMegabytes) << 20, MaxBackups: cfg.Rotation.MaxBackups},
		otlp:     cfg.Format == formatOTLPJSON,
		write:    writeSeam(),
		filePerm: filePerm,
		dirPerm:  dirPerm,
		dedup:    dedup.NewWindow(cfg.DedupWindowSpans),
		retry:    newRetryTable(),
		errs:     bounded.New[[2]string, int](maxTrackedRollouts),
		names:    capturedir.NewNameCache(tmpl, maxCachedNames),
		split:    newRolloutSplits(cfg),
		creds:    cfg.Credentials.Rule(),
		credLog:  credentials.NewLog(set.Logger, credentialsMetric),
	}, nil
}

func (e *spansExporter) start(_ context.Context, host component.Host) error {
	if err := ensureDir(e.cfg.CaptureDir, e.dirPerm); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	if err := checkWritable(e.cfg.CaptureDir); err != nil {
		return fmt.Errorf("gymspans exporter: capture_dir: %w", err)
	}
	maxOpen := e.cfg.MaxOpenFiles
	if e.cfg.CombinedFile != "" {
		maxOpen -= e.cfg.journalDescriptors()
	}
	store, err := capturedir.Open(e.cfg.CaptureDir, capturedir.Options{
		FilePerm:     e.filePerm,
		MaxOpenFiles: maxOpen,
		Observer:     e.metrics,
		Shared:       e.cfg.SharedCaptureDir,
		Write:        e.write,
		SyncfsAbove:  e.syncfsAbove,
		Logger:       e.logger,
	})
	if err != nil {
		return fmt.Errorf("gymspans exporter: %w", err)
	}
	if e.split != nil {
		e.split.start(store.DirFD())
	}
	store.HoldLocks(e.cfg.LockHold, e.commits.whenIdle)
	e.commits.afterGroup = func() { store.ExpireKept(time.Now()) }
	fail := func(err error) error {
		if e.journal != nil {
			_ = e.journal.Close(true)
			e.journal = nil
			e.metrics.OpenFilesChanged(-e.cfg.journalDescriptors())
		}
		_ = store.Close()
		return fmt.Errorf("gymspans exporter: %w", err)
	}
	if e.cfg.ServiceMap.Enabled && e.sm == nil {
		sm, err := newServiceMapObserver(e.cfg, e.logger)
		if err != nil {
			return fail(err)
		}
		e.sm = sm
	}
	e.markedRoots = marksRoots(e.cfg.RolloutRoots, host)
	if e.cfg.RolloutsFile != "" {
		rule := "a parentless span with a rollout id"
		if e.markedRoots {
			rule = "the span the gym processor marked " + gymconv.RolloutRootAttribute
		} else if e.cfg.RolloutRoots == rootsAuto {
			rule += " (no gym processor in this collector)"
		}
		e.logger.Info("rollouts.jsonl: a rollout's root is "+rule, zap.String("rollout_roots", e.cfg.RolloutRoots))
	}
	if e.cfg.CombinedFile != "" {
		if err := e.startJournal(store); err != nil {
			return fail(err)
		}
	}
	var j tickJournal = noJournal{}
	if e.journal != nil {
		j = e.journal
	}
	f := newFlusher(e, store, j)
	w := e.newGroupWriter(store, f)
	e.mu.Lock()
	e.store, e.flusher, e.writer = store, f, w
	e.mu.Unlock()
	go f.run()
	return nil
}

// startJournal opens the journal index, completes the files of the
// exporters that died before they wrote them (internal/recovery), and
// starts the pending store.
func (e *spansExporter) startJournal(store *capturedir.Store) error {
	j, err := journal.Open(store.DirFD(), journal.Options{
		Fingerprint: journalConfig(e.cfg), DirPerm: uint32(e.dirPerm.Perm()), FilePerm: store.FilePerm(),
		WindowKeys: e.cfg.DedupWindowSpans, WithData: e.cfg.restOnly(), SegmentBytes: maxSegmentBytes,
	})
	if err != nil {
		return err
	}
	e.journal = j
	e.metrics.OpenFilesChanged(e.cfg.journalDescriptors()) // open_files counts the index's descriptors too
	e.pending = pending.NewStore(e.metrics.pendingChanged, e.cfg.MaxPendingBytes)
	return recovery.Run(store, e.recoveryOptions(j))
}

// journalConfig is what an index's lines depend on besides the journal
// (its fingerprint): another exporter completes a dead index only if it
// has the same.
func journalConfig(cfg *Config) string {
	return strings.Join([]string{cfg.CombinedFile, cfg.Format, cfg.PathTemplate, cfg.RolloutsFile, cfg.RolloutAttribute, cfg.RunAttribute}, "\x00")
}

// maxSegmentBytes is the journal index's journal.Options.SegmentBytes (a
// variable for the tests).
var maxSegmentBytes int64 = journal.DefaultSegmentBytes

func (e *spansExporter) shutdown(context.Context) error {
	e.mu.Lock()
	store, f := e.store, e.flusher
	e.store = nil
	e.mu.Unlock()
	if store == nil {
		return nil
	}
	e.inflight.Wait()
	close(f.stop)
	<-f.stopped
	// The last flush: every pending line to its file, fsync, the service map.
	err := f.tick()
	if e.pending != nil {
		if e.pending.Size() > 0 {
			err = errors.Join(err, errors.New("some rollout lines could not be written; the next start completes them from the combined file"))
		}
		e.pending.Close()
	}
	errs := []error{err}
	if e.journal != nil {
		// With everything written the index is no longer needed; else it is
		// left for the next start to complete.
		errs = append(errs, e.journal.Close(err == nil))
		e.metrics.OpenFilesChanged(-e.cfg.journalDescriptors())
		if err == nil && e.sm != nil {
			e.sm.forget(e.journal.ID())
			errs = append(errs, e.sm.flush())
		}
	}
	errs = append(errs, store.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gymspans exporter: shutdown: %w", err)
	}
	return nil
}

func (e *spansExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	e.mu.Lock()
	store, w := e.store, e.writer
	if store == nil {
		e.mu.Unlock()
		return errors.New("gymspans exporter: not started")
	}
	e.inflight.Add(1)
	e.mu.Unlock()
	defer e.inflight.Done()
	e.active.Add(1)
	defer func() {
		if e.active.Add(-1) == 0 {
			store.Idle()
		}
	}()
	if err := w.admit(ctx); err != nil {
		return err
	}
	td = e.withoutCredentials(ctx, td)
	b := e.free.get()
	defer e.free.put(b)
	b.td = td
	e.metrics.duplicate(e.claimSpans(b, td))
	e.encode(b, td)
	if len(b.files) == 0 && len(b.roots) == 0 {
		return e.finishBatch(w, b, td) // nothing to write (every span written before, or in flight)
	}
	w.encoded(b)
	e.commits.commit(b, w.writeGroup)
	return e.finishBatch(w, b, td)
}

// kindOf is the file kind of a name the writer appends to.
func (e *spansExporter) kindOf(name string) string {
	switch name {
	case e.cfg.CombinedFile:
		return fileKindCombined
	case e.cfg.RolloutsFile:
		return fileKindRollouts
	}
	return fileKindRollout
}

// rotationOf is the rotation of a file kind (only the combined file rotates).
func (e *spansExporter) rotationOf(kind string) *capturedir.Rotation {
	if kind == fileKindCombined {
		return e.rot
	}
	return nil
}

// observe hands the spans whose lines are now in every file to the service
// map (write-through mode; a span that failed before is observed when its
// retry succeeds).
func (e *spansExporter) observe(b *batch, td ptrace.Traces) {
	if e.sm == nil {
		return
	}
	for idx, ref := range b.refs {
		if ref.claim != dedup.ClaimNew || (len(b.failed) > 0 && b.failed[idx]) {
			continue
		}
		rs := td.ResourceSpans().At(int(ref.rs))
		e.sm.observe(rs.Resource(), rs.ScopeSpans().At(int(ref.ss)).Spans().At(int(ref.sp)))
	}
}

// testSeam replaces write(2) in tests that build the exporter through the
// factory.
var testSeam capturedir.WriteFunc

func writeSeam() capturedir.WriteFunc {
	if testSeam != nil {
		return testSeam
	}
	return capturedir.Writev
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
