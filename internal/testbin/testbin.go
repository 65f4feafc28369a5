// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package testbin gives subprocess tests the repository's binaries: the one
// an environment variable names, else one `go build` per test process and
// command, shared by every test of that process. It is imported only by
// tests.
package testbin // import "github.com/otelcol-gym/otelcol-gym/internal/testbin"

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	mu     sync.Mutex
	builds = map[string]*build{}
)

// RepoRoot is the module root.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path returns the binary of ./cmd/<name>: the file envVar names when it is
// set (an error when that file does not exist), else one built into a
// temporary directory on first use.
func Path(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w", envVar, p, err)
		}
		return p, nil
	}
	mu.Lock()
	b := builds[name]
	if b == nil {
		b = &build{}
		builds[name] = b
	}
	mu.Unlock()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "otelcol-gym-testbin-")
		if err != nil {
			b.err = err
			return
		}
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, "./cmd/"+name)
		cmd.Dir = RepoRoot()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, stderr.String())
			return
		}
		b.path = out
	})
	return b.path, b.err
}
