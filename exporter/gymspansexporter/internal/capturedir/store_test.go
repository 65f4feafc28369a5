// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
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

// TestRotationLeavesFsyncToFlush: a rotation renames the combined file
// without fsyncing it in the caller's append; the backup and the dir are
// owed to the next flush, which syncs them (one at a time below the syncfs
// threshold, or all with one syncfs above it) and owes nothing after.
func TestRotationLeavesFsyncToFlush(t *testing.T) {
	for _, tc := range []struct {
		syncfsAbove int
		wantSyncfs  int64
	}{{1000, 0}, {0, 1}} {
		t.Run(fmt.Sprint("syncfs_above_", tc.syncfsAbove), func(t *testing.T) {
			s, ev := openTest(t, 16, false)
			defer func() { require.NoError(t, s.Close()) }()
			s.syncfsAbove = tc.syncfsAbove
			rot := &Rotation{MaxBytes: 64 << 10, MaxBackups: 100}
			line := strings.Repeat("x", 1000) + "\n"
			for i := 0; i < 5; i++ {
				data := make([][]byte, 20) // ~20 KB each
				for j := range data {
					data[j] = []byte(line)
				}
				require.NoError(t, s.Append("spans.jsonl", data, len(data)*len(line), AppendOpts{Kind: "combined", Rotate: rot}))
			}
			backups := backupsOf(t, ev.dir, "spans.jsonl")
			require.NotEmpty(t, backups)
			s.mu.Lock()
			for _, b := range backups {
				assert.Contains(t, s.closedDirty, b)
			}
			assert.True(t, s.dirDirty)
			s.mu.Unlock()

			require.NoError(t, s.Flush())
			s.mu.Lock()
			assert.Empty(t, s.closedDirty)
			assert.False(t, s.dirDirty)
			s.mu.Unlock()
			assert.Equal(t, tc.wantSyncfs, s.syncfsCalls.Load())
			assert.Zero(t, ev.fsyncErr)
		})
	}
}

// TestFlushSyncfsAboveThreshold: a flush with more than syncfsThreshold
// files to sync makes one syncfs and forgets them all; with fewer, it
// fsyncs each (evicted ones reopened) and makes no syncfs.
func TestFlushSyncfsAboveThreshold(t *testing.T) {
	for _, tc := range []struct {
		files      int
		wantSyncfs int64
	}{{syncfsThreshold / 2, 0}, {syncfsThreshold * 3, 1}} {
		t.Run(fmt.Sprint(tc.files), func(t *testing.T) {
			s, ev := openTest(t, 4, false) // most files are evicted while dirty
			defer func() { require.NoError(t, s.Close()) }()
			for i := 0; i < tc.files; i++ {
				appendLine(t, s, fmt.Sprintf("r%d.spans.jsonl", i), "{}\n", AppendOpts{Kind: "rollout"})
			}
			s.mu.Lock()
			require.NotEmpty(t, s.closedDirty)
			s.mu.Unlock()

			require.NoError(t, s.Flush())
			assert.Equal(t, tc.wantSyncfs, s.syncfsCalls.Load())
			s.mu.Lock()
			assert.Empty(t, s.closedDirty)
			for n, h := range s.handles {
				assert.False(t, h.dirty, n)
			}
			s.mu.Unlock()
			assert.Zero(t, ev.fsyncErr)
		})
	}
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

// TestSharedByDefaultOnNetworkFilesystems: unset, shared_capture_dir is
// on for a network filesystem and off for a local one; set, it wins.
func TestSharedByDefaultOnNetworkFilesystems(t *testing.T) {
	fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var st unix.Statfs_t
	require.NoError(t, unix.Fstatfs(fd, &st))
	got, err := sharedCaptureDir(nil, fd)
	require.NoError(t, err)
	assert.Equal(t, networkFilesystems[int64(st.Type)], got) //nolint:unconvert // not int64 on every platform
	assert.True(t, networkFilesystems[unix.NFS_SUPER_MAGIC])
	on, off := true, false
	got, err = sharedCaptureDir(&on, fd)
	require.NoError(t, err)
	assert.True(t, got)
	got, err = sharedCaptureDir(&off, fd)
	require.NoError(t, err)
	assert.False(t, got)
}
