// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, content string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o640))
	return path
}

func names(in inputs) []string {
	var out []string
	for _, f := range in.files {
		out = append(out, filepath.Base(f.path)+" "+f.format.String())
	}
	return out
}

// TestFindInputs: what each kind of path a user names resolves to.
func TestFindInputs(t *testing.T) {
	otlp := `{"resourceSpans":[]}` + "\n"
	t.Run("job dir with only backups", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "otel", "traces-2026-12-01T10-00-00.000.jsonl"), otlp)
		in, err := findInputs([]string{dir})
		require.NoError(t, err)
		assert.Equal(t, []string{"traces-2026-12-01T10-00-00.000.jsonl OTLP/JSON"}, names(in))
		require.Len(t, in.jobs, 1)
		assert.Equal(t, filepath.Join(dir, "model-calls"), in.jobs[0].modelDir)
		assert.Empty(t, in.jobs[0].artifacts, "no artifacts/ in this job")
	})
	t.Run("capture dir", func(t *testing.T) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "spans.jsonl"), `{"name": "x"}`+"\n")
		write(t, filepath.Join(dir, "spans-2026-12-01T10-00-00.000000000.jsonl"), "")
		in, err := findInputs([]string{dir})
		require.NoError(t, err)
		assert.Equal(t, []string{"spans-2026-12-01T10-00-00.000000000.jsonl console", "spans.jsonl console"}, names(in))
		assert.Empty(t, in.jobs)
	})
	t.Run("a file named twice, and its backup named too", func(t *testing.T) {
		dir := t.TempDir()
		live := write(t, filepath.Join(dir, "traces.jsonl"), otlp)
		backup := write(t, filepath.Join(dir, "traces-2026-12-01T10-00-00.000.jsonl"), otlp)
		in, err := findInputs([]string{backup, live, live})
		require.NoError(t, err)
		assert.Equal(t, []string{"traces-2026-12-01T10-00-00.000.jsonl OTLP/JSON", "traces.jsonl OTLP/JSON"}, names(in))
	})
	t.Run("a first line longer than what is sniffed", func(t *testing.T) {
		path := write(t, filepath.Join(t.TempDir(), "big.jsonl"), `{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":{"stringValue":"`+strings.Repeat("v", sniffBytes)+`"}}]}}]}`+"\n")
		in, err := findInputs([]string{path})
		require.NoError(t, err)
		assert.Equal(t, []string{"big.jsonl OTLP/JSON"}, names(in))
	})
	t.Run("a dir that is neither", func(t *testing.T) {
		dir := t.TempDir()
		_, err := findInputs([]string{dir})
		require.ErrorContains(t, err, "neither a gym eval submit job dir (no otel/traces.jsonl) nor a capture dir otelcol-gym wrote (no spans.jsonl)")
	})
	t.Run("a path that is not there", func(t *testing.T) {
		_, err := findInputs([]string{filepath.Join(t.TempDir(), "nope")})
		require.ErrorContains(t, err, "no such file")
	})
}
