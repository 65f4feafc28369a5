// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWritePythonFiles: every .py of python/ and bridge/ in the source tree
// is written, byte for byte, private to the user, and bridge/nemo stays a
// namespace portion (no __init__.py), so that the bridge can stand in front
// of an installed nemo-lens in the same namespace.
func TestWritePythonFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writePythonFiles(dir))
	var want []string
	for _, root := range []string{"python", "bridge"} {
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".py" {
				return err
			}
			want = append(want, p)
			src, err := os.ReadFile(p)
			require.NoError(t, err)
			got, err := os.ReadFile(filepath.Join(dir, p))
			require.NoError(t, err, "%s written", p)
			assert.Equal(t, string(src), string(got), p)
			return nil
		}))
	}
	assert.Contains(t, want, filepath.Join("python", "sitecustomize.py"))
	assert.Contains(t, want, filepath.Join("python", "otelcol_gym_instrument", "__init__.py"))
	assert.Contains(t, want, filepath.Join("bridge", "nemo", "lens", "__init__.py"))
	assert.NoFileExists(t, filepath.Join(dir, "bridge", "nemo", "__init__.py"))

	var written []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		st, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			if p != dir {
				assert.Equal(t, fs.FileMode(0o700), st.Mode().Perm(), p)
			}
			return nil
		}
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), p)
		rel, _ := filepath.Rel(dir, p)
		written = append(written, rel)
		return nil
	}))
	assert.ElementsMatch(t, append(want, markerName), written, "nothing but the Python side and the marker")
}

func TestIsPrivateDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ours, err := os.MkdirTemp("", privatePrefix+"*")
	require.NoError(t, err)
	assert.False(t, isPrivateDir(ours), "no marker yet")
	require.NoError(t, writePythonFiles(ours))
	assert.True(t, isPrivateDir(ours))

	other, err := os.MkdirTemp("", "something-else-*")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other, markerName), nil, 0o600))
	assert.False(t, isPrivateDir(other), "not our prefix")
	nested := filepath.Join(ours, privatePrefix+"x")
	require.NoError(t, os.Mkdir(nested, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(nested, markerName), nil, 0o600))
	assert.False(t, isPrivateDir(nested), "not directly under the temporary directory")
	assert.False(t, isPrivateDir(os.TempDir()))
}
