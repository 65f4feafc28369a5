// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/internal/boundedlog"
	"github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
)

// Setup problems of design §4.5 (metric attribute "problem"): the rollout
// core tells them (rollout.Problem).
const (
	problemNoEvidence          = rollout.ProblemNoEvidence
	problemServerWithoutParent = rollout.ProblemServerWithoutParent
	problemOnlyOrchestrator    = rollout.ProblemOnlyOrchestrator
	problemObservabilityOff    = rollout.ProblemObservabilityOff
	numProblems                = rollout.NumProblems
)

var problemNames = [numProblems]string{"no_rollout_evidence", "server_without_parent", "only_orchestrator", "observability_off"}

// logEvery is the least time between two log lines about the same problem.
const logEvery = time.Minute

var problemHelp = [numProblems]string{
	"Spans arrive but neither a rollout id nor a sign that Gym's observability is off appeared within `wait` of a run's first span. The gym processor keeps going as for any run: a span whose parent has not arrived waits for it (up to rollout_wait), other spans leave at most `wait` after their root, and rollout ids are added when they appear. If this is a Gym run, check that Gym's observability_enabled is true (otherwise no rollout ids exist)",
	"SERVER spans arrive with no parent: the http_client span group is off, or the calling process has no telemetry, so no traceparent reaches the server",
	"Only orchestrator spans arrive for a run: the servers never initialized telemetry (NEMO_GYM_OTEL_ENABLED must reach each server process)",
	"Gym's observability is off in a run (a gym.rollout span without a rollout id, or a POST on a model route without the /ng-rollout/ prefix): Gym puts no rollout ids anywhere, so the run's spans now pass through unchanged, without waiting, until a rollout id appears in it. Set observability_enabled: true in Gym's config to get one trace and one file per rollout",
}

// diagnostics logs, rate-limited, the setup problems of design §4.5 and
// downstream failures, with the counts seen since the last line.
type diagnostics struct {
	logger *zap.Logger
	limit  *boundedlog.Limiter // keys: problemNames, and logStorageFailed
	held   *boundedlog.Limiter // the redelivery lines (redeliver_log.go)
}

// Key of the log line about the storage.
const logStorageFailed = "storage_failed"

func newDiagnostics(logger *zap.Logger, clk clock) *diagnostics {
	return &diagnostics{logger: logger, limit: boundedlog.NewLimiter(logEvery, clk.Now), held: boundedlog.NewLimiter(heldLogEvery, clk.Now)}
}

func (d *diagnostics) report(r *round) {
	for i, c := range r.core.Problems {
		if c == 0 {
			continue
		}
		if n, ok := d.limit.Allow(problemNames[i], c); ok {
			fields := []zap.Field{zap.String("problem", problemNames[i]), zap.Int64("count", n)}
			if runs := r.core.ProblemRuns[i]; len(runs) > 0 {
				fields = append(fields, zap.Int("runs", len(runs)), zap.String("run", boundedlog.Truncate(runs[0], 64)))
			}
			d.logger.Warn(problemHelp[i], fields...)
		}
	}
}

// storageFailed logs, rate-limited, a failure of the storage extension.
func (d *diagnostics) storageFailed(err error) {
	if n, ok := d.limit.Allow(logStorageFailed, 1); ok {
		d.logger.Error("gym processor: its storage failed; a batch it could not record is refused (the sender retries it), a tick is postponed, spans refused by the next consumer are held in memory",
			zap.Int64("count", n), zap.Error(err))
	}
}
