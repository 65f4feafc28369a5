// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package recovery_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/dedup"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/journal"
	"github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/recovery"
)

// nopObserver ignores the file layer's events.
type nopObserver struct{}

func (nopObserver) TornTailCut(string)        {}
func (nopObserver) TailRead(string)           {}
func (nopObserver) Statted(string)            {}
func (nopObserver) Rotated(string)            {}
func (nopObserver) OpenFilesChanged(int)      {}
func (nopObserver) FsyncFailed(string, error) {}
func (nopObserver) Opened(string, bool)       {}
func (nopObserver) Locked(string)             {}
func (nopObserver) Appended(string)           {}

// consoleLine is a console line of span n of rollout, parentless when root.
func consoleLine(rollout string, n int) string {
	parent := ""
	if n > 0 {
		parent = fmt.Sprintf(`"parent_span_id":"%016x",`, 1000)
	}
	return fmt.Sprintf(`{"name":"s%d","kind":"SPAN_KIND_INTERNAL","trace_id":"%032x",%s"span_id":"%016x","attributes":{"nemo.gym.rollout_id":%q}}`+"\n",
		n, 7, parent, 1000+n, rollout)
}

// capture is a capture dir with a store and the journal index of an
// exporter that wrote lines to its combined file.
type capture struct {
	dir   string
	store *capturedir.Store
}

func newCapture(t *testing.T) *capture {
	t.Helper()
	dir := t.TempDir()
	shared := true
	store, err := capturedir.Open(dir, capturedir.Options{FilePerm: 0o640, MaxOpenFiles: 16, Observer: nopObserver{}, Shared: &shared, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return &capture{dir: dir, store: store}
}

func (c *capture) index(t *testing.T, fingerprint string) *journal.Index {
	t.Helper()
	j, err := journal.Open(c.store.DirFD(), journal.Options{Fingerprint: fingerprint, DirPerm: 0o750, FilePerm: 0o640, WindowKeys: 100})
	require.NoError(t, err)
	return j
}

// crashAfter writes lines to spans.jsonl as one extent of a fresh index
// (with roots, rollouts.jsonl lines) and leaves the index as a kill -9 does.
func (c *capture) crashAfter(t *testing.T, fingerprint string, lines []string, roots ...[]byte) {
	t.Helper()
	j := c.index(t, fingerprint)
	f, err := os.OpenFile(filepath.Join(c.dir, "spans.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	require.NoError(t, err)
	defer f.Close()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	p := journal.AppendExtentHeader(nil, st.Ino, st.Size, len(lines))
	var keys []dedup.Key
	for _, l := range lines {
		p = journal.AppendLineRef(p, journal.LineRef{N: uint32(len(l)), CRC: journal.Checksum(0, []byte(l)), Keys: 1})
		keys = append(keys, keyOf(t, l))
	}
	p = journal.AppendCount(p, len(keys))
	for _, k := range keys {
		p = append(p, k[:]...)
	}
	p = journal.AppendRoots(p, roots)
	_, err = j.AddExtent(p, len(keys))
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(lines, ""))
	require.NoError(t, err)
	require.NoError(t, j.Close(false))
}

// keyOf is the dedup key of a console line of consoleLine.
func keyOf(t *testing.T, line string) dedup.Key {
	t.Helper()
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	var n int
	_, err := fmt.Sscanf(line[strings.Index(line, `"span_id":"`)+len(`"span_id":"`):], "%016x", &n)
	require.NoError(t, err)
	tid[15] = 7
	sid[6], sid[7] = byte(n>>8), byte(n)
	return dedup.MakeKey(tid, sid)
}

// run runs a recovery with a fresh index of fingerprint, and returns the
// lines it counted per kind.
func (c *capture) run(t *testing.T, fingerprint string) map[string]int {
	t.Helper()
	j := c.index(t, fingerprint)
	defer func() { require.NoError(t, j.Close(true)) }()
	counted := map[string]int{}
	err := recovery.Run(c.store, recovery.Options{
		Logger: zap.NewNop(), Warn: func(string, string, ...zap.Field) {}, Recovered: func(kind string, n int) { counted[kind] += n },
		Journal: j, Dedup: dedup.NewWindow(100),
		RolloutOf: func(_, span pcommon.Map) (string, string) {
			v, _ := span.Get("nemo.gym.rollout_id")
			return "", v.Str()
		},
		Template:     capturedir.NewTemplate("{rollout_id}.spans.jsonl", "spans.jsonl", "spans.jsonl", "rollouts.jsonl"),
		Encode:       func(ptrace.Traces, string) []byte { return nil },
		CombinedFile: "spans.jsonl", RolloutsFile: "rollouts.jsonl", WindowSpans: 100,
		RolloutKind: "rollout", RolloutsKind: "rollouts",
	})
	require.NoError(t, err)
	require.NoError(t, c.store.Flush())
	return counted
}

func (c *capture) read(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(data)
}

// TestRunCompletesTheFiles: the lines of a dead exporter's extent go to
// their rollout files and its root's line to rollouts.jsonl, once, whatever
// the files already hold; the dead index is removed.
func TestRunCompletesTheFiles(t *testing.T) {
	c := newCapture(t)
	lines := []string{consoleLine("0-0", 0), consoleLine("0-0", 1), consoleLine("0-1", 2)}
	root := fmt.Sprintf(`{"rollout_id":"0-0","trace_id":"%032x","root_span_id":"%016x"}`+"\n", 7, 1000)
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "0-0.spans.jsonl"), []byte(lines[0]), 0o640)) // flushed before the crash
	c.crashAfter(t, "cfg", lines, []byte(root))

	counted := c.run(t, "cfg")
	assert.Equal(t, lines[0]+lines[1], c.read(t, "0-0.spans.jsonl"))
	assert.Equal(t, lines[2], c.read(t, "0-1.spans.jsonl"))
	assert.Equal(t, root, c.read(t, "rollouts.jsonl"))
	assert.Equal(t, map[string]int{"rollout": 2, "rollouts": 1}, counted)
	ents, err := os.ReadDir(filepath.Join(c.dir, journal.Dir))
	require.NoError(t, err)
	assert.Empty(t, ents, "the dead index is removed")

	assert.Empty(t, c.run(t, "cfg"), "a second start completes nothing")
	assert.Equal(t, lines[0]+lines[1], c.read(t, "0-0.spans.jsonl"))
}

// TestRunTakesOnlyLinesThatAreThere: an extent's lines are taken up to the
// first whose CRC fails (a torn write, or another collector's lines).
func TestRunTakesOnlyLinesThatAreThere(t *testing.T) {
	c := newCapture(t)
	lines := []string{consoleLine("0-0", 1), consoleLine("0-0", 2), consoleLine("0-0", 3)}
	c.crashAfter(t, "cfg", lines)
	data := c.read(t, "spans.jsonl")
	other := strings.Replace(lines[1], `"s2"`, `"x2"`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, "spans.jsonl"), []byte(strings.Replace(data, lines[1], other, 1)), 0o640))

	c.run(t, "cfg")
	assert.Equal(t, lines[0], c.read(t, "0-0.spans.jsonl"))
}

// TestRunLeavesAnotherConfigsIndex: an index written with another
// fingerprint is left for an exporter configured as it was.
func TestRunLeavesAnotherConfigsIndex(t *testing.T) {
	c := newCapture(t)
	c.crashAfter(t, "old", []string{consoleLine("0-0", 1)})
	assert.Empty(t, c.run(t, "new"))
	assert.Empty(t, c.read(t, "0-0.spans.jsonl"))
	assert.Equal(t, map[string]int{"rollout": 1}, c.run(t, "old"), "its own configuration completes it")
	assert.Equal(t, consoleLine("0-0", 1), c.read(t, "0-0.spans.jsonl"))
}
