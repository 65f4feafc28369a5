// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap/zaptest"
)

// jobFromGolden makes a gym eval submit job dir whose otel/traces.jsonl
// holds the processor's golden input ../../testdata/<name>/input.json, one
// batch a resource (as processes send them), each resource carrying the
// ingest token as Gym's submit rendering upserts it.
func jobFromGolden(t *testing.T, name string) (dir string, spans int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name, "input.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "otel"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "model-calls"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "artifacts"), 0o750))
	var lines bytes.Buffer
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		one := ptrace.NewTraces()
		rs := one.ResourceSpans().AppendEmpty()
		td.ResourceSpans().At(i).CopyTo(rs)
		rs.Resource().Attributes().PutStr("Authorization", "Bearer secret-ingest-token")
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(one)
		require.NoError(t, err)
		lines.Write(line)
		lines.WriteByte('\n')
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "otel", "traces.jsonl"), lines.Bytes(), 0o640))
	return dir, td.SpanCount()
}

func testOptions(t *testing.T, paths ...string) (options, *bytes.Buffer) {
	var progress bytes.Buffer
	return options{paths: paths, progress: &progress, now: time.Now, logger: zaptest.NewLogger(t)}, &progress
}

// readDir maps each file of dir (not the dot files) to its sorted lines.
func readDir(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(lines)
		out[e.Name()] = lines
	}
	return out
}

// TestReplayJobDir: a job dir replays into its model-calls/: every span in
// spans.jsonl, one rollouts.jsonl row per rollout, the credential dropped
// and counted; the summary names the viewer command with the job's
// artifacts/.
func TestReplayJobDir(t *testing.T) {
	dir, spans := jobFromGolden(t, "default_preset_3_rollouts")
	opt, _ := testOptions(t, dir)
	res, err := run(context.Background(), opt)
	require.NoError(t, err)
	out := filepath.Join(dir, "model-calls")
	assert.Equal(t, out, res.out)
	assert.Equal(t, int64(spans), res.spansRead)
	files := readDir(t, out)
	assert.Len(t, files["spans.jsonl"], spans)
	assert.Len(t, files["rollouts.jsonl"], 3)
	assert.Equal(t, int64(3), res.rollouts)
	for name, lines := range files {
		for _, l := range lines {
			assert.NotContains(t, l, "secret-ingest-token", name)
		}
	}
	assert.Equal(t, res.in.files[0].size, res.bytes)
	assert.Positive(t, res.credentials)
	assert.Equal(t, []string{"Authorization"}, res.credentialKeys)
	assert.NoDirExists(t, filepath.Join(out, stageDir))

	var summary bytes.Buffer
	writeSummary(&summary, res)
	assert.Contains(t, summary.String(), "otelcol-gym view --capture-dir "+out+" --gym-output "+filepath.Join(dir, "artifacts"))
	assert.Contains(t, summary.String(), "dropped")
}

// TestReplayTwiceDuplicatesNothing: a second replay into the same dir
// replaces the first's files (doc.go), so every file holds what one replay
// writes; the summary says so.
func TestReplayTwiceDuplicatesNothing(t *testing.T) {
	dir, _ := jobFromGolden(t, "default_preset_3_rollouts")
	opt, _ := testOptions(t, dir)
	_, err := run(context.Background(), opt)
	require.NoError(t, err)
	out := filepath.Join(dir, "model-calls")
	once := readDir(t, out)
	// A file the first replay wrote and the second will not is removed.
	require.NoError(t, os.WriteFile(filepath.Join(out, "9-9.spans.jsonl"), []byte("{}\n"), 0o640))
	m, err := os.ReadFile(filepath.Join(out, markerFile))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, markerFile), bytes.Replace(m, []byte(`"0-0.spans.jsonl"`), []byte(`"0-0.spans.jsonl", "9-9.spans.jsonl"`), 1), 0o640))

	res, err := run(context.Background(), opt)
	require.NoError(t, err)
	assert.True(t, res.replacedPrevious)
	assert.Equal(t, once, readDir(t, out))
	var summary bytes.Buffer
	writeSummary(&summary, res)
	assert.Contains(t, summary.String(), "replaced the previous replay's files")
}

// TestReplayRefusesALiveCaptureDir: a dir holding a collector's output (no
// replay's marker) is not written into: the user is told why and what to do.
func TestReplayRefusesALiveCaptureDir(t *testing.T) {
	dir, _ := jobFromGolden(t, "default_preset_3_rollouts")
	out := filepath.Join(dir, "model-calls")
	require.NoError(t, os.WriteFile(filepath.Join(out, "0-0.spans.jsonl"), []byte("{}\n"), 0o640))
	opt, _ := testOptions(t, dir)
	_, err := run(context.Background(), opt)
	require.ErrorContains(t, err, "0-0.spans.jsonl, which no replay wrote")
	require.ErrorContains(t, err, "--capture-dir")
	assert.Equal(t, map[string][]string{"0-0.spans.jsonl": {"{}"}}, readDir(t, out))
	assert.NoDirExists(t, filepath.Join(out, stageDir))
}

// TestReplayNeedsAnOutput: without a job dir, replay asks for --capture-dir.
func TestReplayNeedsAnOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gym.log")
	require.NoError(t, os.WriteFile(path, []byte("hello\n"), 0o640))
	opt, _ := testOptions(t, path)
	_, err := run(context.Background(), opt)
	require.ErrorContains(t, err, "give --capture-dir DIR")
}

// TestReplayJoinsCaptures: with Gym's captures in the job's model-calls/,
// model calls get their GenAI attributes, as gymcapture gives them live
// (the spans and capture of gymcapture's capture_before_span case).
func TestReplayJoinsCaptures(t *testing.T) {
	src := filepath.Join("..", "..", "processor", "gymcaptureprocessor", "testdata", "capture_before_span")
	b, err := os.ReadFile(filepath.Join(src, "input.json"))
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(b)
	require.NoError(t, err)
	line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	capture, err := os.ReadFile(filepath.Join(src, "before", "0-0.capture.jsonl"))
	require.NoError(t, err)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "otel", "traces.jsonl"), string(line)+"\n")
	write(t, filepath.Join(dir, "model-calls", "0-0.capture.jsonl"), string(capture))

	opt, _ := testOptions(t, dir)
	res, err := run(context.Background(), opt)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "model-calls"), res.captures)
	spans, err := os.ReadFile(filepath.Join(dir, "model-calls", "0-0.spans.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(spans), `"gen_ai.usage.input_tokens"`)
	got, err := os.ReadFile(filepath.Join(dir, "model-calls", "0-0.capture.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, capture, got, "Gym's capture is left as it was")
}

// TestReplayInterrupted: a replay stopped before it ends (Ctrl-C) leaves
// the output dir as it was: the previous replay's files, no stage.
func TestReplayInterrupted(t *testing.T) {
	dir, _ := jobFromGolden(t, "default_preset_3_rollouts")
	opt, _ := testOptions(t, dir)
	_, err := run(context.Background(), opt)
	require.NoError(t, err)
	out := filepath.Join(dir, "model-calls")
	before := readDir(t, out)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = run(ctx, opt)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, before, readDir(t, out))
	assert.NoDirExists(t, filepath.Join(out, stageDir))
}
