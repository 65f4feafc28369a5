// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// pythonFiles is what runs on the Python side: python/ (sitecustomize.py,
// the otelcol_gym_instrument package, the probe) and bridge/ (the nemo-lens
// bridge, never on PYTHONPATH: sitecustomize puts it in front where chosen).
// "all:" because Python's package files start with an underscore.
//
//go:embed all:python all:bridge
var pythonFiles embed.FS

const (
	// pythonDirName is the directory under the private dir that goes on
	// PYTHONPATH.
	pythonDirName = "python"
	// probeScript, under pythonDirName, prints the choice of the Python that
	// runs it as JSON.
	probeScript = "otelcol_gym_probe.py"
	// markerName marks a directory as one of ours: the cleanup removes none
	// without it.
	markerName = ".otelcol-gym-instrument"
)

// writePythonFiles writes the Python side into dir (python/ and bridge/),
// files 0600 and directories 0700, and the marker; __pycache__ directories
// a developer's Python left in the source tree are not embedded copies of
// anything and are skipped.
func writePythonFiles(dir string) error {
	err := fs.WalkDir(pythonFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return fs.SkipDir
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if path.Ext(p) != ".py" {
			return nil
		}
		b, err := pythonFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		return fmt.Errorf("writing the Python side into %s: %w", dir, err)
	}
	return os.WriteFile(filepath.Join(dir, markerName), nil, 0o600)
}
