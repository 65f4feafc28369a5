// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// sender polls the viewer's join for scores not acknowledged yet, queues
// them, and sends those due. One goroutine owns it and everything it holds.
type sender struct {
	source  func() []gymview.Score
	backend backend
	kind    string
	acked   *acked
	queue   *queue
	log     *zap.Logger
	tel     *metadata.TelemetryBuilder
	now     func() time.Time

	givenUp map[string]bool // keys given up: not queued again until a restart
	down    string          // the cause of the backend's current outage; "" while it takes scores
	failed  int             // scores given up since the last line that said so
}

// run polls and sends every interval until ctx is done.
func (s *sender) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round queues the new scores and sends those due.
func (s *sender) round(ctx context.Context) {
	now := s.now()
	for _, g := range s.source() {
		for _, sc := range scoresOf(g) {
			k := sc.key()
			if s.acked.has(k) || s.queue.has(k) || s.givenUp[k] {
				continue
			}
			if !s.queue.add(sc, now) {
				break // full: the rest wait in Gym's files for a later round
			}
		}
	}
	for _, it := range s.queue.due(now) {
		if ctx.Err() != nil {
			break
		}
		if !s.try(ctx, it) {
			break // the backend takes nothing now: the others keep their turn
		}
	}
	s.tel.ExtensionGymscoresScoresQueued.Record(ctx, int64(s.queue.len()))
}

// try sends one item; false when the backend as a whole refused it.
func (s *sender) try(ctx context.Context, it *item) bool {
	err := s.backend.send(ctx, it.s, !it.first.IsZero())
	now := s.now()
	if err == nil {
		s.queue.remove(it)
		if aerr := s.acked.add(it.s); aerr != nil {
			s.log.Warn("Cannot remember a sent score: it may be sent again after a restart", zap.String("file", s.acked.path), zap.Error(aerr))
		}
		s.tel.ExtensionGymscoresScoresSent.Add(ctx, 1)
		if s.down != "" {
			s.log.Info("The backend takes Gym's scores again", zap.String("backend", s.kind))
			s.down = ""
		}
		return true
	}
	if ctx.Err() != nil {
		return false // shutting down: the score is sent after the next start
	}
	var se *sendError
	if !errors.As(err, &se) {
		se = &sendError{backendWide: true, msg: err.Error()}
	}
	if se.backendWide && s.down == "" {
		s.down = se.msg
		s.log.Warn("The backend refuses Gym's scores; retrying with backoff", zap.String("backend", s.kind), zap.String("cause", se.msg))
	}
	if se.permanent || !s.queue.failed(it, now) {
		s.queue.remove(it)
		s.givenUp[it.key] = true
		s.tel.ExtensionGymscoresScoresFailed.Add(ctx, 1)
		s.failed++
		if s.failed == 1 {
			s.log.Error("Gave up sending a score of Gym's; it is sent again after a restart (later ones are counted in otelcol_extension_gymscores_scores_failed)",
				zap.String("backend", s.kind), zap.String("rollout", it.s.RolloutID), zap.String("score", it.s.Name), zap.String("cause", se.msg))
		}
	}
	return !se.backendWide
}
