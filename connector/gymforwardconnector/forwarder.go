// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymforwardconnector // import "github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector"

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/connector/gymforwardconnector/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/boundedlog"
)

// Forwarding is best effort (design §6): the capture dir is the record, and
// a backend that is down must cost forwarded data only. So what the
// forwarding pipeline refuses (its exporter's queue is full: the backend has
// not taken what it was sent for a while) is dropped from forwarding here,
// counted and logged, and never returned upstream, where it would make the
// gym processor keep and redeliver the whole batch to every exporter of the
// traces pipeline and, at its bounds, refuse new spans to Gym.
//
//	offer -> waiting (refused less than a backoff ago)? -> dropped
//	      -> send (the forwarding pipeline) -> refused -> dropped, backoff doubles
//	                                        -> taken   -> failure over (one info line)
//
// After a refusal nothing is offered for a backoff (1 s, doubling to 15 s
// while it refuses): the exporter writes an error line for every batch it
// refuses, and a full queue is not emptier a moment later.
const (
	firstBackoff = time.Second
	maxBackoff   = 15 * time.Second
	// logEvery is how often a failure that goes on is logged again.
	logEvery = 10 * time.Second
)

// signal is what the connector forwards, in its log lines and metrics.
type signal struct {
	name   string // "traces"
	items  string // "spans"
	metric string // its counter, as the collector's Prometheus endpoint names it
	count  func(*metadata.TelemetryBuilder) metric.Int64Counter
}

var (
	signalTraces = signal{"traces", "spans", "otelcol_connector_gymforward_spans_dropped",
		func(b *metadata.TelemetryBuilder) metric.Int64Counter { return b.ConnectorGymforwardSpansDropped }}
	signalMetrics = signal{"metrics", "metric points", "otelcol_connector_gymforward_metric_points_dropped",
		func(b *metadata.TelemetryBuilder) metric.Int64Counter {
			return b.ConnectorGymforwardMetricPointsDropped
		}}
	signalLogs = signal{"logs", "log records", "otelcol_connector_gymforward_log_records_dropped",
		func(b *metadata.TelemetryBuilder) metric.Int64Counter { return b.ConnectorGymforwardLogRecordsDropped }}
)

// forwarder hands one signal on to the forwarding pipeline and owns what it
// knows of that pipeline's refusals.
type forwarder struct {
	sig     signal
	to      string // "to <destination>"
	logger  *zap.Logger
	dropped metric.Int64Counter
	now     func() time.Time

	mu      sync.Mutex
	failing failure // zero while the forwarding pipeline takes what it is given
}

// failure is one episode of refusals, from the first to the next take.
type failure struct {
	since    time.Time     // the first refusal
	cause    error         // the last refusal
	backoff  time.Duration // the wait after the last refusal
	resume   time.Time     // nothing is offered before it
	total    int64         // items not forwarded since `since`
	unlogged int64         // items not forwarded since the last line
	logged   time.Time     // the last line
}

func newForwarder(set connector.Settings, cfg *Config, sig signal, now func() time.Time) (*forwarder, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("gymforward connector metrics: %w", err)
	}
	to := "through " + set.ID.String()
	if cfg.Destination != "" {
		to = "to " + cfg.Destination
	}
	return &forwarder{sig: sig, to: to, logger: set.Logger, dropped: sig.count(tel), now: now}, nil
}

// offer hands n items on with send, unless the forwarding pipeline refused
// less than a backoff ago; either way it returns nothing upstream.
func (f *forwarder) offer(ctx context.Context, n int, send func(context.Context) error) {
	if f.waiting() {
		f.drop(ctx, int64(n), nil)
		return
	}
	if err := send(ctx); err != nil {
		f.drop(ctx, int64(n), err)
		return
	}
	f.taken()
}

func (f *forwarder) waiting() bool {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	return now.Before(f.failing.resume)
}

// drop counts n items not forwarded, err the refusal (nil: not offered), and
// logs at the first and then at most every logEvery.
func (f *forwarder) drop(ctx context.Context, n int64, err error) {
	f.dropped.Add(ctx, n)
	now := f.now()
	f.mu.Lock()
	s := &f.failing
	switch {
	case err != nil && s.since.IsZero():
		s.since, s.backoff = now, firstBackoff
	case err != nil:
		s.backoff = min(2*s.backoff, maxBackoff)
	case s.since.IsZero(): // it took again meanwhile
		f.mu.Unlock()
		return
	}
	if err != nil {
		s.cause, s.resume = err, now.Add(s.backoff)
	}
	s.total += n
	s.unlogged += n
	if !s.logged.IsZero() && now.Sub(s.logged) < logEvery {
		f.mu.Unlock()
		return
	}
	line := *s
	s.logged, s.unlogged = now, 0
	f.mu.Unlock()
	f.logFailing(line, now)
}

// taken ends a failure, if there was one, with an info line.
func (f *forwarder) taken() {
	f.mu.Lock()
	s := f.failing
	f.failing = failure{}
	f.mu.Unlock()
	if s.since.IsZero() {
		return
	}
	f.logger.Info(fmt.Sprintf("forwarding %s %s works again; %d %s were not forwarded while it failed (%s, since %s)",
		f.sig.items, f.to, s.total, f.sig.items, f.now().Sub(s.since).Round(time.Second), s.since.UTC().Format(time.RFC3339)),
		zap.Int64("not_forwarded", s.total))
}

// Capabilities: the data is handed on unchanged.
func (*forwarder) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// Start says where the signal is forwarded, so that a user sees forwarding
// is on; the forwarder holds no data and runs nothing.
func (f *forwarder) Start(context.Context, component.Host) error {
	f.logger.Info(fmt.Sprintf("forwarding %s %s", f.sig.name, f.to))
	return nil
}

// Shutdown logs the failure still going on, if any: what was not forwarded
// since its last line would otherwise go unsaid.
func (f *forwarder) Shutdown(context.Context) error {
	f.mu.Lock()
	s := f.failing
	f.mu.Unlock()
	if s.since.IsZero() {
		return nil
	}
	f.logger.Error(fmt.Sprintf("forwarding %s %s failed until shutdown: %s; %d %s were not forwarded since %s, %d of them since the last line (%s)",
		f.sig.items, f.to, cause(s.cause), s.total, f.sig.items, s.since.UTC().Format(time.RFC3339), s.unlogged, f.sig.metric),
		zap.Int64("not_forwarded", s.unlogged), zap.Int64("not_forwarded_total", s.total), zap.String("error", cause(s.cause)))
	return nil
}

// cause is a refusal as the lines give it: the forwarding exporter's error,
// which may carry what the backend answered, bounded.
func cause(err error) string { return boundedlog.Truncate(err.Error(), maxCause) }

// maxCause bounds a refusal's text in a line.
const maxCause = 512

// logFailing writes the error line of s, the failure as it was when the line
// was due.
func (f *forwarder) logFailing(s failure, now time.Time) {
	msg := fmt.Sprintf("forwarding %s %s fails: %s; %d %s not forwarded", f.sig.items, f.to, cause(s.cause), s.unlogged, f.sig.items)
	if s.unlogged != s.total {
		msg = fmt.Sprintf("forwarding %s %s still fails: %s; %d %s not forwarded since the last line, %d since %s",
			f.sig.items, f.to, cause(s.cause), s.unlogged, f.sig.items, s.total, s.since.UTC().Format(time.RFC3339))
	}
	f.logger.Error(msg+fmt.Sprintf(". Local capture goes on: the pipeline's other exporters have them; only forwarding misses them. "+
		"A full sending queue means the backend has not taken what it was sent (the forwarding exporter's \"Exporting failed\" lines say what it answered). "+
		"Next attempt in %s; until then nothing is forwarded (%s)", s.resume.Sub(now).Round(time.Millisecond), f.sig.metric),
		zap.Int64("not_forwarded", s.unlogged), zap.Int64("not_forwarded_total", s.total), zap.String("error", cause(s.cause)))
}
