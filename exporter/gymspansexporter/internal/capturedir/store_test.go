// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// events is an Observer that counts what the store reports and, on a
// rotation, records whether the rotated name already leads to a file.
type events struct {
	dir string

	mu       sync.Mutex
	exists   []bool
	torn     int
	fsyncErr int
	open     int
}

func (ev *events) Rotated(name string) {
	_, err := os.Lstat(filepath.Join(ev.dir, name))
	ev.mu.Lock()
	ev.exists = append(ev.exists, err == nil)
	ev.mu.Unlock()
}

func (ev *events) TornTailCut(string) { ev.mu.Lock(); ev.torn++; ev.mu.Unlock() }

func (ev *events) OpenFilesChanged(d int) { ev.mu.Lock(); ev.open += d; ev.mu.Unlock() }

func (ev *events) FsyncFailed(string, error) { ev.mu.Lock(); ev.fsyncErr++; ev.mu.Unlock() }
func (*events) Opened(string, bool)          {}
func (*events) Locked(string)                {}
func (*events) TailRead(string)              {}
func (*events) Statted(string)               {}
func (*events) Appended(string)              {}

// openTest opens a store on a fresh dir; shared turns the locks on.
func openTest(t *testing.T, maxOpen int, shared bool) (*Store, *events) {
	t.Helper()
	dir := t.TempDir()
	ev := &events{dir: dir}
	s, err := Open(dir, Options{FilePerm: 0o640, MaxOpenFiles: maxOpen, Observer: ev, Shared: &shared, Logger: zap.NewNop()})
	require.NoError(t, err)
	return s, ev
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

func backupsOf(t *testing.T, dir, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if IsBackupName(name, e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func appendLine(t *testing.T, s *Store, name, line string, o AppendOpts) {
	t.Helper()
	require.NoError(t, s.Append(name, [][]byte{[]byte(line)}, len(line), o))
}

// TestTornTailIsCut: a last line without its newline (a crash mid-write)
// is cut before the next append, however long it is; whole lines stay.
func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct{ name, before, kept string }{
		{"after whole lines", "{\"a\":1}\n{\"b\":2}\n{\"tor", "{\"a\":1}\n{\"b\":2}\n"},
		{"only a torn line", "{\"torn", ""},
		{"torn line longer than one read", "{\"a\":1}\n" + strings.Repeat("x", 200_000), "{\"a\":1}\n"},
		{"clean", "{\"a\":1}\n", "{\"a\":1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, shared := range []bool{false, true} {
				s, ev := openTest(t, 16, shared)
				path := filepath.Join(ev.dir, "spans.jsonl")
				require.NoError(t, os.WriteFile(path, []byte(tc.before), 0o640))
				appendLine(t, s, "spans.jsonl", "{\"new\":1}\n", AppendOpts{Kind: "combined"})
				require.NoError(t, s.Close())
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, tc.kept+"{\"new\":1}\n", string(data))
				torn := 0
				if tc.kept != tc.before {
					torn = 1
				}
				assert.Equal(t, torn, ev.torn)
				assert.Zero(t, ev.open, "every descriptor given back")
			}
		})
	}
}

// TestUnsafeFilesRefused: a symlink, a directory or a hard link by the
// name is not written through (ErrUnsafeFile), and nothing it leads to
// changes.
func TestUnsafeFilesRefused(t *testing.T) {
	s, ev := openTest(t, 16, true)
	defer func() { require.NoError(t, s.Close()) }()
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, nil, 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(ev.dir, "link.jsonl")))
	require.NoError(t, os.Mkdir(filepath.Join(ev.dir, "dir.jsonl"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(ev.dir, "a.jsonl"), nil, 0o600))
	require.NoError(t, os.Link(filepath.Join(ev.dir, "a.jsonl"), filepath.Join(ev.dir, "hard.jsonl")))
	for _, name := range []string{"link.jsonl", "dir.jsonl", "hard.jsonl"} {
		err := s.Append(name, [][]byte{[]byte("x\n")}, 2, AppendOpts{Kind: "rollout"})
		require.ErrorIs(t, err, ErrUnsafeFile, name)
	}
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Empty(t, data)
	data, err = os.ReadFile(filepath.Join(ev.dir, "a.jsonl"))
	require.NoError(t, err)
	assert.Empty(t, data)
}

// TestRotationCreatesTheNewFileAtOnce: when a rotation renames the combined
// file away, the new, empty file is already there as it is reported (a
// reader following the name sees no gap, and a kill right after the rename
// leaves the file in place), and the append that rotated lands in it.
func TestRotationCreatesTheNewFileAtOnce(t *testing.T) {
	s, ev := openTest(t, 16, true)
	defer func() { require.NoError(t, s.Close()) }()
	rot := &Rotation{MaxBytes: 10, MaxBackups: 5}
	for i := 0; i < 3; i++ {
		appendLine(t, s, "spans.jsonl", "0123456789\n", AppendOpts{Kind: "combined", Rotate: rot})
	}
	assert.Equal(t, []bool{true, true}, ev.exists)
	assert.Len(t, readLines(t, filepath.Join(ev.dir, "spans.jsonl")), 1)
	st, err := os.Stat(filepath.Join(ev.dir, "spans.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
}
