// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package journal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
)

// openIndex opens an index in a fresh capture dir and returns it with the
// capture dir's path.
func openIndex(t testing.TB, withData bool) (*journal.Index, string) {
	t.Helper()
	dir := t.TempDir()
	j, err := journal.Open(openDir(t, dir), journal.Options{Fingerprint: "test", DirPerm: 0o750, FilePerm: 0o640, WindowKeys: 1000, WithData: withData})
	require.NoError(t, err)
	return j, dir
}

// groupTail is the end of a group's record: its keys and its rollouts.jsonl lines.
func groupTail(p []byte, keys []dedup.Key, roots ...[]byte) []byte {
	p = journal.AppendCount(p, len(keys))
	for _, k := range keys {
		p = append(p, k[:]...)
	}
	p = journal.AppendRoots(p, roots)
	return p
}

// openDir opens dir for the test.
func openDir(t testing.TB, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// openIndexIn opens a second index in dir (another exporter on the same
// capture dir).
func openIndexIn(t testing.TB, dir string) (*journal.Index, string) {
	t.Helper()
	j, err := journal.Open(openDir(t, dir), journal.Options{Fingerprint: "test", DirPerm: 0o750, FilePerm: 0o640, WindowKeys: 1000})
	require.NoError(t, err)
	return j, dir
}

// TestDeadIndexReadsBack: what an index records (extents, a P record and
// its blob, a cancelled group, done, keys) reads back from it once its
// exporter is gone, and Remove deletes it; a live index is not dead.
func TestDeadIndexReadsBack(t *testing.T) {
	j, dir := openIndex(t, true)
	lines := []journal.LineRef{{N: 10, CRC: 7, Keys: 1}, {N: 20, CRC: 9, Keys: 1}}
	p := journal.AppendExtentHeader(nil, 42, 100, len(lines))
	for _, l := range lines {
		p = journal.AppendLineRef(p, l)
	}
	seq, err := j.AddExtent(groupTail(p, []dedup.Key{{1}, {2}}, []byte(`{"root":1}`+"\n")), 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), seq)

	var sb journal.SpansBlob
	var m ptrace.ProtoMarshaler
	td := tracesOf(7, 1, 2)
	proto, err := m.MarshalTraces(td)
	require.NoError(t, err)
	sb.Add(proto, 2, func(int) bool { return true })
	spansSeq, err := j.AddSpans(&sb, groupTail(journal.AppendSpansHeader(nil), []dedup.Key{{3}}), 1)
	require.NoError(t, err)
	cancelled, err := j.AddSpans(&sb, groupTail(journal.AppendSpansHeader(nil), nil), 0)
	require.NoError(t, err)
	require.NoError(t, j.Cancel(cancelled))
	require.NoError(t, j.MarkDone(2))
	require.NoError(t, j.AddKeys([]dedup.Key{{4}, {5}}))
	require.NoError(t, j.Sync())

	other, _ := openIndexIn(t, dir)
	dead, err := other.FindDead()
	require.NoError(t, err)
	assert.Empty(t, dead, "a live index is not dead")
	require.NoError(t, j.Close(false)) // a crash: the index stays
	dead, err = other.FindDead()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	d := dead[0]
	assert.Equal(t, j.ID(), d.ID)
	require.NoError(t, d.Read())
	assert.False(t, d.Foreign())
	assert.False(t, d.Torn)
	assert.Equal(t, uint64(2), d.Done)
	require.Len(t, d.Extents, 2, "the cancelled group is not among them")
	x := d.Extents[0]
	assert.Equal(t, uint64(1), x.Seq)
	assert.Equal(t, uint64(42), x.Ino)
	assert.Equal(t, int64(100), x.Off)
	assert.Equal(t, lines, x.Lines)
	assert.Len(t, x.Keys, 2)
	assert.Equal(t, [][]byte{[]byte(`{"root":1}` + "\n")}, x.Roots)
	x = d.Extents[1]
	assert.True(t, x.Spans)
	assert.Equal(t, spansSeq, x.Seq)
	blob, ok := d.Blob(x)
	require.True(t, ok)
	got, err := journal.DecodeBlob(blob)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, td, got[0].Traces)
	assert.Len(t, d.Keys, 2, "the K record's keys")
	require.NoError(t, d.Remove())
	require.NoError(t, other.Close(true))
	ents, err := os.ReadDir(filepath.Join(dir, journal.Dir))
	require.NoError(t, err)
	assert.Empty(t, ents, "no index is left")
}

// TestDeadIndexTornRecord: a record cut by a crash ends the index there;
// what comes before it reads back.
func TestDeadIndexTornRecord(t *testing.T) {
	j, dir := openIndex(t, false)
	for range 2 {
		p := journal.AppendExtentHeader(nil, 1, 0, 1)
		p = journal.AppendLineRef(p, journal.LineRef{N: 5, CRC: 1})
		_, err := j.AddExtent(groupTail(p, nil), 0)
		require.NoError(t, err)
	}
	require.NoError(t, j.Close(false))
	segs, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(segs[0], data[:len(data)-5], 0o640))

	other, _ := openIndexIn(t, dir)
	dead, err := other.FindDead()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.NoError(t, dead[0].Read())
	assert.True(t, dead[0].Torn)
	require.Len(t, dead[0].Extents, 1)
	assert.Equal(t, uint64(1), dead[0].Extents[0].Seq)
	dead[0].Release()
	require.NoError(t, other.Close(true))
}

// TestDeadIndexForeign: an index written with another fingerprint is
// foreign to the one that finds it.
func TestDeadIndexForeign(t *testing.T) {
	j, dir := openIndex(t, false)
	require.NoError(t, j.Close(false))
	fd := openDir(t, dir)
	other, err := journal.Open(fd, journal.Options{Fingerprint: "another", DirPerm: 0o750, FilePerm: 0o640})
	require.NoError(t, err)
	dead, err := other.FindDead()
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.NoError(t, dead[0].Read())
	assert.True(t, dead[0].Foreign())
	dead[0].Release()
	require.NoError(t, other.Close(true))
}

// TestSegmentsRotateAndGo: a segment past Options.SegmentBytes is followed
// by a new one at Maintain, and the older ones go once their extents are
// done and in the service map.
func TestSegmentsRotateAndGo(t *testing.T) {
	dir := t.TempDir()
	fd := openDir(t, dir)
	j, err := journal.Open(fd, journal.Options{Fingerprint: "test", DirPerm: 0o750, FilePerm: 0o640, SegmentBytes: 256})
	require.NoError(t, err)
	var last uint64
	for range 50 {
		p := journal.AppendExtentHeader(nil, 1, 0, 1)
		p = journal.AppendLineRef(p, journal.LineRef{N: 5, CRC: 1})
		last, err = j.AddExtent(groupTail(p, nil), 0)
		require.NoError(t, err)
		require.NoError(t, j.Maintain(0))
	}
	segs, err := filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
	require.NoError(t, err)
	assert.Greater(t, len(segs), 2, "segments of 256 bytes")
	require.NoError(t, j.MarkDone(last+1))
	require.NoError(t, j.Maintain(last+1))
	segs, err = filepath.Glob(filepath.Join(dir, journal.Dir, "*.seg"))
	require.NoError(t, err)
	assert.Len(t, segs, 1, "only the current segment is left")
	require.NoError(t, j.Close(true))
}
