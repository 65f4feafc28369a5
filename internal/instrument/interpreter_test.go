// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShebangPython(t *testing.T) {
	bin := t.TempDir()
	envPython := filepath.Join(bin, "python3")
	require.NoError(t, os.WriteFile(envPython, []byte("#!/bin/sh\n"), 0o700))
	t.Setenv("PATH", bin)
	for _, tc := range []struct {
		name, head, want string
		ok               bool
	}{
		{"console script", "#!/venv/bin/python\n# -*- coding: utf-8 -*-\nimport re\n", "/venv/bin/python", true},
		{"versioned", "#!/venv/bin/python3.13 -I\n", "/venv/bin/python3.13", true},
		{"env", "#!/usr/bin/env python3\n", envPython, true},
		{"env -S", "#!/usr/bin/env -S python3 -u\n", envPython, true},
		{"env, not on PATH", "#!/usr/bin/env python3.99\n", "", false},
		{"pip's launcher", "#!/bin/sh\n'''exec' /a/very/long/venv/bin/python \"$0\" \"$@\"\n' '''\n", "/a/very/long/venv/bin/python", true},
		{"pip's launcher, a space", "#!/bin/sh\n'''exec' \"/my venv/bin/python3\" \"$0\" \"$@\"\n' '''\n", "/my venv/bin/python3", true},
		{"shell script", "#!/bin/sh\nexec gym \"$@\"\n", "", false},
		{"bash", "#!/usr/bin/env bash\n", "", false},
		{"node", "#!/usr/bin/node\n", "", false},
		{"no shebang", "\x7fELF\x02\x01", "", false},
		{"empty shebang", "#!\n", "", false},
		{"pythonic name", "#!/opt/pythonista\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := shebangPython([]byte(tc.head))
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestPythonOf(t *testing.T) {
	dir := t.TempDir()
	gym := filepath.Join(dir, "gym")
	require.NoError(t, os.WriteFile(gym, []byte("#!/venv/bin/python3.13\nimport sys\n"), 0o700))
	p, ok := pythonOf(gym)
	assert.True(t, ok)
	assert.Equal(t, "/venv/bin/python3.13", p)

	p, ok = pythonOf("/venv/bin/python3") // an interpreter by its name, not read
	assert.True(t, ok)
	assert.Equal(t, "/venv/bin/python3", p)

	_, ok = pythonOf(filepath.Join(dir, "missing"))
	assert.False(t, ok)
}
