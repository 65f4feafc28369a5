// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite testdata/*/expected.json from what the readers read (inspect the diff)")

// recorder is a sink that keeps what it is given.
type recorder struct {
	batches []ptrace.Traces
	skipped []skipped
}

func (r *recorder) batch(td ptrace.Traces) error { r.batches = append(r.batches, td); return nil }
func (r *recorder) skip(s skipped)               { r.skipped = append(r.skipped, s) }

// readAll reads what findInputs finds for paths, as replay does.
func readAll(t *testing.T, paths ...string) (inputs, *recorder) {
	t.Helper()
	in, err := findInputs(paths)
	require.NoError(t, err)
	rec := &recorder{}
	for _, f := range in.files {
		h, err := os.Open(f.path)
		require.NoError(t, err)
		if f.format == formatOTLPJSON {
			require.NoError(t, readOTLPJSON(filepath.Base(f.path), h, rec))
		} else {
			require.NoError(t, readConsole(filepath.Base(f.path), h, rec))
		}
		h.Close()
	}
	return in, rec
}

// goldenRead is a reader case's expected.json: the files read in order with
// their format, every batch as whole OTLP/JSON, and the lines skipped.
type goldenRead struct {
	Files   []string          `json:"files"`
	Batches []json.RawMessage `json:"batches"`
	Skipped []string          `json:"skipped"`
}

// TestReadersGolden: each dir of testdata holds one situation (its name
// says which) as input files, and expected.json what is read from them.
// The input is the dir's traces.jsonl or gym.log, as a user names it.
func TestReadersGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			path := filepath.Join(dir, "traces.jsonl")
			if !isFile(path) {
				path = filepath.Join(dir, "gym.log")
			}
			in, rec := readAll(t, path)
			got := goldenRead{Files: []string{}, Batches: []json.RawMessage{}, Skipped: []string{}}
			for _, f := range in.files {
				got.Files = append(got.Files, filepath.Base(f.path)+" ("+f.format.String()+")")
			}
			for _, td := range rec.batches {
				b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
				require.NoError(t, err)
				got.Batches = append(got.Batches, b)
			}
			for _, s := range rec.skipped {
				got.Skipped = append(got.Skipped, s.String())
			}
			b, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			golden := filepath.Join(dir, "expected.json")
			if *update {
				require.NoError(t, os.WriteFile(golden, append(b, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./internal/replay -run TestReadersGolden -update, and read the diff")
			assert.JSONEq(t, string(want), string(b))
		})
	}
}
