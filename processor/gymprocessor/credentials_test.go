// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
)

// credentialsBatch is internal/credentials' golden input: a rollout's
// spans whose resource, span, event and link attributes carry credentials
// (every value that must go is spelt *-secret-N).
func credentialsBatch(t *testing.T) ptrace.Traces {
	return readTraces(t, "../../internal/credentials/testdata/traces_in.json")
}

const secretMark = "-secret-"

// journalHolds reports whether any key of the store holds s.
func (m *memStorage) holds(s string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.keys {
		if strings.Contains(string(v), s) {
			return true
		}
	}
	return false
}

func tracesJSON(t *testing.T, tds []ptrace.Traces) string {
	var b strings.Builder
	for _, td := range tds {
		out, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		b.Write(out)
	}
	return b.String()
}

// TestCredentialsNeverRecordedNorHandedOn (design §6): a batch's
// credentials are removed before the journal records it; what is handed on,
// and what is held, has none; the removals are counted. With the rule off
// they would reach the journal (the check can fail).
func TestCredentialsNeverRecordedNorHandedOn(t *testing.T) {
	h := newCrashHarness(t, testConfig())
	in := credentialsBatch(t)
	spans := in.SpanCount()
	h.consume(in)
	h.tickAt(time.Minute)
	assert.False(t, h.store.holds(secretMark), "the journal holds a credential")
	got := tracesJSON(t, h.sink.AllTraces()) + h.drain()
	assert.NotContains(t, got, secretMark)
	assert.Contains(t, got, "gen_ai.usage.input_tokens")
	assert.Contains(t, got, `"token_count"`)
	assert.Equal(t, spans, h.sink.SpanCount(), "every span left")
	m, err := h.tel.GetMetric("otelcol_processor_gym_credentials_removed")
	require.NoError(t, err)
	golden, err := os.ReadFile("../../internal/credentials/testdata/traces_in.json")
	require.NoError(t, err)
	assert.Equal(t, int64(strings.Count(string(golden), secretMark)), sumPoints(m.Data, nil))

	cfg := testConfig()
	cfg.Credentials = credentials.Config{Keys: []string{}, Suffixes: []string{}}
	off := newCrashHarness(t, cfg)
	off.consume(credentialsBatch(t))
	assert.True(t, off.store.holds(secretMark), "with the rule off the journal holds the batch as it came")
}

// TestCredentialsRemovedFromAnOldJournal: records written without the rule
// (an older collector, or the rule off) lose their credentials when a start
// replays them.
func TestCredentialsRemovedFromAnOldJournal(t *testing.T) {
	cfg := testConfig()
	cfg.Credentials = credentials.Config{Keys: []string{}, Suffixes: []string{}}
	h := newCrashHarness(t, cfg)
	in := credentialsBatch(t)
	// Without its rollout id, every span waits: the kill finds them held.
	for _, rs := range in.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				sp.Attributes().Remove("nemo.gym.rollout.id")
			}
		}
	}
	h.consume(in)
	require.Equal(t, 3, h.pending())
	require.True(t, h.store.holds(secretMark))
	h.kill()
	h.sink.Reset()
	h.cfg = testConfig()
	h.cfg.Storage = &storageID
	h.start()
	require.Equal(t, 3, h.pending(), "the replay holds the spans again")
	got := tracesJSON(t, h.sink.AllTraces()) + h.drain()
	assert.NotContains(t, got, secretMark)
	assert.Contains(t, got, "gym.model.responses")
}

// TestCredentialsConfig: unset lists are the defaults, an empty list is
// none (both empty: the rule is off), and an empty entry is refused,
// naming the key.
func TestCredentialsConfig(t *testing.T) {
	load := func(raw map[string]any) (*Config, error) {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"credentials": raw}).Unmarshal(cfg))
		return cfg, confmap.Validate(cfg)
	}
	cfg, err := load(map[string]any{"keys": []any{}, "suffixes": []any{}})
	require.NoError(t, err)
	assert.True(t, cfg.Credentials.Rule().Off())

	cfg, err = load(map[string]any{"keys": []any{"X-Gym-Key"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"X-Gym-Key"}, cfg.Credentials.Keys)
	assert.Equal(t, credentials.DefaultSuffixes, cfg.Credentials.Suffixes)
	assert.True(t, cfg.Credentials.Rule().Match("x-gym-key"))
	assert.False(t, cfg.Credentials.Rule().Match("authorization"))

	_, err = load(map[string]any{"suffixes": []any{""}})
	require.ErrorContains(t, err, "credentials")
	require.ErrorContains(t, err, "suffixes[0] is empty")
}
