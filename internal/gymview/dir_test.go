// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plantHostileDir makes a capture dir beside a secret file, with names that
// pass the rule but are not regular files inside the dir: symlinks to the
// secret, to a file inside, and to the parent, a FIFO and a directory.
func plantHostileDir(t *testing.T) (dir, secret string) {
	t.Helper()
	root := t.TempDir()
	secret = "SECRET-" + filepath.Base(root)
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret.txt"), []byte(`{"name":"`+secret+`"}`+"\n"), 0o600))
	dir = filepath.Join(root, "captures")
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.spans.jsonl"), []byte("{}\n"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(dir, "evil.spans.jsonl")))
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "evil.capture.jsonl")))
	require.NoError(t, os.Symlink("ok.spans.jsonl", filepath.Join(dir, "inside.spans.jsonl")))
	require.NoError(t, os.Symlink("..", filepath.Join(dir, "up.spans.jsonl")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.spans.jsonl"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.spans.jsonl"), 0o750))
	require.NoError(t, os.Link(filepath.Join(root, "secret.txt"), filepath.Join(dir, "hard.spans.jsonl")))
	return dir, secret
}

func TestCaptureDirOpen(t *testing.T) {
	dir, _ := plantHostileDir(t)
	d := newCaptureDir(dir)
	defer d.close()

	f, st, err := d.open(fileName{"ok.spans.jsonl"})
	require.NoError(t, err)
	b, _ := io.ReadAll(f)
	f.Close()
	assert.Equal(t, "{}\n", string(b))
	assert.EqualValues(t, 3, st.Size())

	for _, name := range []string{"evil.spans.jsonl", "evil.capture.jsonl", "inside.spans.jsonl", "up.spans.jsonl", "fifo.spans.jsonl", "sub.spans.jsonl", "hard.spans.jsonl"} {
		_, _, err := d.open(fileName{name})
		assert.True(t, errors.Is(err, errNotRegular), "%s: %v", name, err)
	}
	_, _, err = d.open(fileName{"missing.spans.jsonl"})
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	_, _, err = d.open(fileName{})
	assert.Error(t, err)

	var names []string
	require.NoError(t, d.eachEntry(func(n string) { names = append(names, n) }))
	assert.ElementsMatch(t, []string{"ok.spans.jsonl", "hard.spans.jsonl"}, names, "only regular files are listed")
}

func TestCaptureDirNotThereYet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "later")
	d := newCaptureDir(dir)
	defer d.close()
	var names []string
	require.NoError(t, d.eachEntry(func(n string) { names = append(names, n) }))
	assert.Empty(t, names)
	_, _, err := d.open(rolloutsFile)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)

	require.NoError(t, os.Mkdir(dir, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rollouts.jsonl"), nil, 0o600))
	f, _, err := d.open(rolloutsFile)
	require.NoError(t, err, "the dir is opened once it exists")
	f.Close()
}
