// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadata"
	"github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension/internal/metadatatest"
	"github.com/otelcol-gym/otelcol-gym/internal/gymview"
)

// realGym is a real Gym run's capture dir and output (internal/gymview's
// testdata/realgym_why/README.md): 10 rollouts, some failed, all with
// verdicts.
const realGym = "../../internal/gymview/testdata/realgym_why"

// realGymScores is the viewer's join over realGym.
func realGymScores(t *testing.T) func() []gymview.Score {
	h, err := gymview.New(gymview.Options{CaptureDir: filepath.Join(realGym, "captures"), GymOutput: filepath.Join(realGym, "gym-output")})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	require.NotEmpty(t, h.Scores())
	return h.Scores
}

// wantTaken is every score of realGym as fakeBackend counts it, once each.
func wantTaken(t *testing.T, kind string, source func() []gymview.Score) map[string]int {
	want := map[string]int{}
	for _, g := range source() {
		for _, s := range scoresOf(g) {
			v := s.value()
			if kind == BackendPhoenix {
				want["session:"+s.RolloutID+" "+s.Name+" "+v] = 1
			}
			want[s.TraceID+" "+s.Name+" "+v] = 1
		}
	}
	return want
}

// testSender is a sender over source to f, with a clock the test moves and
// retries that never give up unless retry says so.
func testSender(t *testing.T, f *fakeBackend, source func() []gymview.Score, dir string, retry configretry.BackOffConfig, queueSize int) (*sender, *componenttest.Telemetry, *observer.ObservedLogs) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	tel, err := metadata.NewTelemetryBuilder(tt.NewTelemetrySettings())
	require.NoError(t, err)
	done, err := loadAcked(dir, backendID(f.kind, f.srv.URL))
	require.NoError(t, err)
	core, logs := observer.New(zap.InfoLevel)
	clock := time.Unix(1_800_000_000, 0)
	s := &sender{
		source: source, backend: newBackend(f.kind, f.srv.Client(), f.srv.URL), kind: f.kind, acked: done,
		queue: newQueue(queueSize, retry), log: zap.New(core), tel: tel, givenUp: map[string]bool{},
		now: func() time.Time { clock = clock.Add(time.Minute); return clock },
	}
	return s, tt, logs
}

func neverGiveUp() configretry.BackOffConfig {
	r := configretry.NewDefaultBackOffConfig()
	r.MaxElapsedTime = 0
	return r
}

// TestScoresArriveOnceThroughRefusals (issue #57 acceptance 2): a backend
// that refuses (401, 500, a closed connection) and then comes back gets
// every score of a real Gym run exactly once; a restart sends none again;
// the capture dir gains only the record of what was acknowledged.
func TestScoresArriveOnceThroughRefusals(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			source := realGymScores(t)
			f := newFakeBackend(t, kind)
			f.refuse(http.StatusUnauthorized, http.StatusUnauthorized, http.StatusInternalServerError, 0, 0, http.StatusServiceUnavailable)
			dir := t.TempDir()
			s, tt, logs := testSender(t, f, source, dir, neverGiveUp(), 4) // a queue smaller than the run
			want := wantTaken(t, kind, source)
			for i := 0; i < 200 && len(f.takenCounts()) < len(want); i++ {
				s.round(t.Context())
			}
			assert.Equal(t, want, f.takenCounts())
			assert.Equal(t, 1, logs.FilterMessage("The backend refuses Gym's scores; retrying with backoff").Len(), "one line for the outage")
			assert.Equal(t, 1, logs.FilterMessage("The backend takes Gym's scores again").Len())
			sent := 0
			for _, g := range source() {
				sent += len(scoresOf(g))
			}
			metadatatest.AssertEqualExtensionGymscoresScoresSent(t, tt, []metricdata.DataPoint[int64]{{Value: int64(sent)}}, metricdatatest.IgnoreTimestamp())

			// More rounds, and a restart over the same capture dir: nothing again.
			s.round(t.Context())
			s2, _, _ := testSender(t, f, source, dir, neverGiveUp(), 100)
			s2.round(t.Context())
			assert.Equal(t, want, f.takenCounts())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			assert.Equal(t, ".gymscores", entries[0].Name())
		})
	}
}

// TestScoreWaitsForItsTrace: a trace the backend has not ingested yet (404)
// is retried without holding up the others.
func TestScoreWaitsForItsTrace(t *testing.T) {
	source := realGymScores(t)
	f := newFakeBackend(t, BackendMLflow)
	first := source()[0].TraceID
	f.notYet(first, 5)
	s, _, _ := testSender(t, f, source, t.TempDir(), neverGiveUp(), 100)
	s.round(t.Context())
	taken := f.takenCounts()
	assert.NotContains(t, fmt.Sprint(taken), first, "not ingested yet")
	assert.NotEmpty(t, taken, "the other rollouts' scores went")
	want := wantTaken(t, BackendMLflow, source)
	for i := 0; i < 20 && len(f.takenCounts()) < len(want); i++ {
		s.round(t.Context())
	}
	assert.Equal(t, want, f.takenCounts())
}

// TestScoreGivenUp: a score the backend refuses for good (400), or past
// max_elapsed_time, is counted, logged once, and not queued again.
func TestScoreGivenUp(t *testing.T) {
	source := realGymScores(t)
	f := newFakeBackend(t, BackendMLflow)
	codes := make([]int, 1000)
	for i := range codes {
		codes[i] = http.StatusBadRequest
	}
	f.refuse(codes...)
	s, tt, logs := testSender(t, f, source, t.TempDir(), neverGiveUp(), 100)
	s.round(t.Context())
	s.round(t.Context())
	n := len(wantTaken(t, BackendMLflow, source))
	metadatatest.AssertEqualExtensionGymscoresScoresFailed(t, tt, []metricdata.DataPoint[int64]{{Value: int64(n)}}, metricdatatest.IgnoreTimestamp())
	assert.Equal(t, 1, logs.FilterLevelExact(zap.ErrorLevel).Len(), "logged once")
	assert.Empty(t, f.takenCounts())
	assert.Zero(t, s.queue.len())
}

// TestScoreGivenUpAfterMaxElapsed: a backend down past max_elapsed_time.
func TestScoreGivenUpAfterMaxElapsed(t *testing.T) {
	source := func() []gymview.Score {
		r := 1.0
		return []gymview.Score{{RolloutID: "0-0", TraceID: "0123456789abcdef0123456789abcdef", Reward: &r}}
	}
	f := newFakeBackend(t, BackendPhoenix)
	f.refuse(500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	r := configretry.NewDefaultBackOffConfig()
	r.MaxElapsedTime = 3 * time.Minute // the test clock moves a minute a call
	s, tt, _ := testSender(t, f, source, t.TempDir(), r, 100)
	for range 5 {
		s.round(t.Context())
	}
	metadatatest.AssertEqualExtensionGymscoresScoresFailed(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
	assert.Empty(t, f.takenCounts())
}

// TestScoreOnceWhenTheAnswerIsLost: MLflow took assessments but its answers
// were lost (502): the retries find them on the trace and create none again.
func TestScoreOnceWhenTheAnswerIsLost(t *testing.T) {
	source := realGymScores(t)
	f := newFakeBackend(t, BackendMLflow)
	f.lose = 5
	s, _, _ := testSender(t, f, source, t.TempDir(), neverGiveUp(), 100)
	want := wantTaken(t, BackendMLflow, source)
	for i := 0; i < 50 && (i == 0 || s.queue.len() > 0); i++ {
		s.round(t.Context())
	}
	assert.Zero(t, s.queue.len())
	assert.Equal(t, want, f.takenCounts())
}
