// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// rolloutsDir is a capture dir with the files of 150,000 rollouts, a
// spans file and a capture file each.
func rolloutsDir(b *testing.B) string {
	dir := b.TempDir()
	for i := range 150_000 {
		id := "rollout-" + strconv.Itoa(i)
		for _, n := range []string{id + ".spans.jsonl", id + ".capture.jsonl"} {
			require.NoError(b, os.WriteFile(filepath.Join(dir, n), nil, 0o640))
		}
	}
	return dir
}

// BenchmarkPruneBackups: the listing a rotation makes of a rolloutsDir that
// holds spans.jsonl's backups too, as many as it keeps: nothing to remove.
func BenchmarkPruneBackups(b *testing.B) {
	dir := rolloutsDir(b)
	for i := range 10 {
		n := "spans-2026-12-03T07-33-4" + strconv.Itoa(i) + ".000000000.jsonl"
		require.NoError(b, os.WriteFile(filepath.Join(dir, n), nil, 0o640))
	}
	s, err := Open(dir, Options{FilePerm: 0o640, MaxOpenFiles: 16, Logger: zap.NewNop()})
	require.NoError(b, err)
	defer func() { require.NoError(b, s.Close()) }()
	b.ReportAllocs()
	for b.Loop() {
		s.pruneBackups("spans.jsonl", 10)
	}
	b.StopTimer()
	left, err := filepath.Glob(filepath.Join(dir, "spans-*.jsonl"))
	require.NoError(b, err)
	require.Len(b, left, 10)
}

// BenchmarkRotatingAppend: an append that rotates spans.jsonl in a
// rolloutsDir, the pruning of its backups beyond 10 left to the pruner.
func BenchmarkRotatingAppend(b *testing.B) {
	dir := rolloutsDir(b)
	s, err := Open(dir, Options{FilePerm: 0o640, MaxOpenFiles: 16, Observer: &events{dir: dir}, Logger: zap.NewNop()})
	require.NoError(b, err)
	defer func() { require.NoError(b, s.Close()) }()
	line := []byte("0123456789\n")
	rot := &Rotation{MaxBytes: 1, MaxBackups: 10}
	b.ReportAllocs()
	for b.Loop() {
		require.NoError(b, s.Append("spans.jsonl", [][]byte{line}, len(line), AppendOpts{Kind: "combined", Rotate: rot}))
	}
	b.StopTimer()
	s.WaitPruned()
}
