// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A replay writes into a stage beside its output and then replaces what
// the previous replay wrote there (doc.go: "Replaying twice").
const (
	// stageDir is where the exporter writes during a replay, inside the
	// output dir (the same file system, so a rename moves a file).
	stageDir = ".otelcol-gym-replay"
	// markerFile lists the files the last replay put into the output dir.
	markerFile = ".otelcol-gym-replay.json"
)

// marker is markerFile's content.
type marker struct {
	Inputs []string `json:"inputs"`
	Files  []string `json:"files"` // relative to the output dir
}

// output is the dir a replay writes into.
type output struct {
	dir  string
	prev marker // the previous replay's, empty when there was none
}

// openOutput prepares dir for a replay: it refuses a dir that holds
// otelcol-gym output no replay wrote (a live collector's: replacing it would
// lose spans), reads the previous replay's marker, and empties the stage (a
// replay killed before it ended leaves one).
func openOutput(dir string) (*output, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	o := &output{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, markerFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &o.prev); err != nil {
			return nil, fmt.Errorf("%s: not a replay's list of files (%w): remove it if no replay wrote into %s", filepath.Join(dir, markerFile), err, dir)
		}
	case errors.Is(err, fs.ErrNotExist):
		if found := liveOutput(dir); found != "" {
			return nil, fmt.Errorf("%s already holds %s, which no replay wrote (a collector's?): replay into another dir with --capture-dir, or move otelcol-gym's files (spans.jsonl, rollouts.jsonl, *.spans.jsonl, service_map.*) out of it", dir, found)
		}
	default:
		return nil, fmt.Errorf("output dir: %w", err)
	}
	if err := os.RemoveAll(o.stage()); err != nil {
		return nil, fmt.Errorf("emptying %s: %w", o.stage(), err)
	}
	if err := os.Mkdir(o.stage(), 0o750); err != nil {
		return nil, fmt.Errorf("output dir: %w", err)
	}
	return o, nil
}

func (o *output) stage() string { return filepath.Join(o.dir, stageDir) }

// liveOutput names a file of gymspans' in dir, or is "".
func liveOutput(dir string) string {
	for _, n := range []string{capturedSpans, "rollouts.jsonl", "service_map.json"} {
		if isFile(filepath.Join(dir, n)) {
			return n
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.spans.jsonl")); len(m) > 0 {
		return filepath.Base(m[0])
	}
	return ""
}

// commit moves what the replay wrote from the stage into the dir, each file
// replacing its namesake with one rename, removes what the previous replay
// wrote that this one did not, and lists the files in the marker. The
// marker lists the union while files move, so a replay killed in between
// leaves nothing that the next replay does not replace or remove. It
// returns the files written.
func (o *output) commit(inputs []string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(o.stage(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(o.stage(), path)
		if err != nil {
			return err
		}
		if rel != "." && strings.HasPrefix(d.Name(), ".") { // the exporter's journal and locks
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", o.stage(), err)
	}
	slices.Sort(files)
	union := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(files), o.prev.Files...))))
	if err := o.writeMarker(marker{Inputs: inputs, Files: union}); err != nil {
		return nil, err
	}
	for _, rel := range files {
		to := filepath.Join(o.dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
			return nil, fmt.Errorf("output dir: %w", err)
		}
		if err := os.Rename(filepath.Join(o.stage(), rel), to); err != nil {
			return nil, fmt.Errorf("moving the replay's %s into place: %w", rel, err)
		}
	}
	for _, rel := range o.prev.Files {
		if _, ok := slices.BinarySearch(files, rel); ok || !filepath.IsLocal(rel) {
			continue
		}
		if err := os.Remove(filepath.Join(o.dir, rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing the previous replay's %s: %w", rel, err)
		}
	}
	if err := o.writeMarker(marker{Inputs: inputs, Files: files}); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.stage()); err != nil {
		return nil, fmt.Errorf("removing %s: %w", o.stage(), err)
	}
	return files, nil
}

// abandon removes the stage after a replay that failed; the dir keeps what
// it held.
func (o *output) abandon() { _ = os.RemoveAll(o.stage()) }

func (o *output) writeMarker(m marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(o.dir, markerFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(o.dir, markerFile)); err != nil {
		return fmt.Errorf("writing %s: %w", markerFile, err)
	}
	return nil
}
