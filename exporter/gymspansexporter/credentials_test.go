// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymspansexporter

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/credentials"
)

const secretMark = "-secret-"

// credentialsBatch is internal/credentials' golden input (every value that
// must go is spelt *-secret-N), read-only as a fanout shares it.
func credentialsBatch(t *testing.T) (ptrace.Traces, int) {
	b, err := os.ReadFile("../../internal/credentials/testdata/traces_in.json")
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	td.MarkReadOnly()
	return td, strings.Count(string(b), secretMark)
}

// dirHolds reports the files under dir (the journal's included) that hold s.
func dirHolds(t *testing.T, dir, s string) []string {
	var hits []string
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			hits = append(hits, p)
		}
		return nil
	}))
	return hits
}

// TestCredentialsNeverInTheCaptureDir (design §6): whichever writer and
// format, no file under the capture dir (its journal included) holds a value
// of an attribute that carries credentials; the caller's batch is left as
// it was; the removals are counted. With the rule off they would be written
// (the check can fail).
func TestCredentialsNeverInTheCaptureDir(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"combined":      func(*Config) {},
		"combined_rest": func(c *Config) { c.CombinedSpans = combinedRest },
		"through":       func(c *Config) { c.CombinedFile = "" },
		"otlp_json":     func(c *Config) { c.Format = formatOTLPJSON },
	} {
		t.Run(name, func(t *testing.T) {
			e, tel := newTestExporter(t, mutate)
			startExporter(t, e)
			td, secrets := credentialsBatch(t)
			require.NoError(t, e.pushTraces(context.Background(), td))
			require.NoError(t, e.shutdown(context.Background()))
			assert.NotEmpty(t, walkFiles(t, e.cfg.CaptureDir))
			assert.Empty(t, dirHolds(t, e.cfg.CaptureDir, secretMark))
			assert.NotEmpty(t, dirHolds(t, e.cfg.CaptureDir, "gen_ai.usage.input_tokens"), "the token counts stay")
			assert.True(t, credentials.Default().InTraces(td), "the caller's batch was changed")
			assert.Equal(t, int64(secrets), metricByAttr(t, tel, credentialsMetric, "")[""])
		})
	}
	t.Run("off", func(t *testing.T) {
		e, _ := newTestExporter(t, func(c *Config) { c.Credentials = credentials.Config{Keys: []string{}, Suffixes: []string{}} })
		startExporter(t, e)
		td, _ := credentialsBatch(t)
		require.NoError(t, e.pushTraces(context.Background(), td))
		require.NoError(t, e.shutdown(context.Background()))
		assert.NotEmpty(t, dirHolds(t, e.cfg.CaptureDir, secretMark))
	})
}
