// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mdatagenInputs are the files of a component that mdatagen reads besides
// metadata.yaml: the README whose status block it rewrites.
var mdatagenInputs = []string{"metadata.yaml", "README.md"}

// TestGeneratedFilesMatchMdatagen runs the mdatagen pinned in internal/tools
// on a copy of every component's metadata.yaml and README.md, placed at the
// same path in a module of the same name, and requires every file it writes
// to be byte-for-byte what is committed.
func TestGeneratedFilesMatchMdatagen(t *testing.T) {
	metadata, err := filepath.Glob(filepath.Join(repoRoot, "*", "*", "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(metadata) < 6 {
		t.Fatalf("found %d metadata.yaml files, want one per component (gym, gymcapture, gymspans, gymview, gymgenai, gymforward)", len(metadata))
	}
	tools, err := filepath.Abs(filepath.Join(repoRoot, "internal", "tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metadata {
		rel, err := filepath.Rel(repoRoot, filepath.Dir(m))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(rel, func(t *testing.T) {
			mod := t.TempDir()
			copyFile(t, filepath.Join(repoRoot, "go.mod"), filepath.Join(mod, "go.mod"))
			dir := filepath.Join(mod, rel)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range mdatagenInputs {
				copyFile(t, filepath.Join(repoRoot, rel, name), filepath.Join(dir, name))
			}
			pkg := filepath.Base(rel)
			stub := "package " + pkg + "\n"
			if err := os.WriteFile(filepath.Join(dir, "doc.go"), []byte(stub), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "-C", tools, "tool", "mdatagen", filepath.Join(dir, "metadata.yaml"))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mdatagen: %v\n%s", err, b)
			}
			compareGenerated(t, dir, filepath.Join(repoRoot, rel))
		})
	}
}

// compareGenerated requires every file under gen but the stub doc.go and
// the copied metadata.yaml to equal the file at the same path under repo.
func compareGenerated(t *testing.T, gen, repo string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(gen, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(gen, path)
		if err != nil {
			return err
		}
		if rel == "doc.go" || rel == "metadata.yaml" {
			return nil
		}
		n++
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		have, err := os.ReadFile(filepath.Join(repo, rel))
		if err != nil {
			t.Errorf("mdatagen generates %s, which is not committed: %v", rel, err)
			return nil
		}
		if !bytes.Equal(want, have) {
			t.Errorf("%s differs from what mdatagen generates from metadata.yaml; run `make generate`", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("mdatagen generated nothing")
	}
	committed, err := filepath.Glob(filepath.Join(repo, "generated_*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range committed {
		name := filepath.Base(c)
		if _, err := os.Stat(filepath.Join(gen, name)); err != nil && strings.HasPrefix(name, "generated_") {
			t.Errorf("%s is committed but mdatagen no longer generates it", name)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
