// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// format is how a file's spans are written.
type format int

const (
	formatOTLPJSON format = iota // upstream's file exporter: one ExportTraceServiceRequest a line
	formatConsole                // Gym's console output, or a capture dir's spans.jsonl
)

func (f format) String() string {
	if f == formatOTLPJSON {
		return "OTLP/JSON"
	}
	return "console"
}

// file is one file to read.
type file struct {
	path   string
	format format
	size   int64
}

// job is a `gym eval submit` job dir found among the inputs: its spans
// (otel/traces*.jsonl), its captures (model-calls/) and Gym's output
// (artifacts/, when there).
type job struct {
	dir       string
	modelDir  string
	artifacts string
}

// inputs is what replay reads, in order, and the jobs they came from.
type inputs struct {
	files []file
	jobs  []job
}

// Names in a job dir and a capture dir.
const (
	jobSpansDir     = "otel"
	jobSpansFile    = "traces.jsonl"
	jobCapturesDir  = "model-calls"
	jobArtifactsDir = "artifacts"
	capturedSpans   = "spans.jsonl"
)

// findInputs resolves the paths a user gave into the files to read, each
// with its format detected by content, in order: the paths in the order
// given, each file's rotated backups (oldest first) before it, no file
// twice.
func findInputs(paths []string) (inputs, error) {
	var in inputs
	seen := map[string]bool{}
	add := func(path string) error {
		for _, p := range append(backupsOf(path), path) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return err
			}
			if seen[abs] {
				continue
			}
			seen[abs] = true
			f, err := detect(p)
			if err != nil {
				return err
			}
			in.files = append(in.files, f)
		}
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return inputs{}, fmt.Errorf("%s: %w", p, err)
		}
		if !st.IsDir() {
			if err := add(p); err != nil {
				return inputs{}, err
			}
			continue
		}
		switch {
		case isFile(filepath.Join(p, jobSpansDir, jobSpansFile)) || len(backupsOf(filepath.Join(p, jobSpansDir, jobSpansFile))) > 0:
			j := job{dir: p, modelDir: filepath.Join(p, jobCapturesDir)}
			if isDir(filepath.Join(p, jobArtifactsDir)) {
				j.artifacts = filepath.Join(p, jobArtifactsDir)
			}
			in.jobs = append(in.jobs, j)
			live := filepath.Join(p, jobSpansDir, jobSpansFile)
			if !isFile(live) { // only backups: read them
				for _, b := range backupsOf(live) {
					if err := add(b); err != nil {
						return inputs{}, err
					}
				}
				continue
			}
			if err := add(live); err != nil {
				return inputs{}, err
			}
		case isFile(filepath.Join(p, capturedSpans)):
			if err := add(filepath.Join(p, capturedSpans)); err != nil {
				return inputs{}, err
			}
		default:
			return inputs{}, fmt.Errorf("%s is a directory, but neither a gym eval submit job dir (no %s) nor a capture dir otelcol-gym wrote (no %s): give the job dir or the files", p, filepath.Join(jobSpansDir, jobSpansFile), capturedSpans)
		}
	}
	return in, nil
}

// backupsOf lists the rotated backups of path, oldest first: the files
// "<stem>-<UTC time>[...]<ext>" beside "<stem><ext>", as upstream's file
// exporter (lumberjack's and timberjack's names) and gymspans name them.
// The time's layout sorts as text.
func backupsOf(path string) []string {
	dir, base := filepath.Split(path)
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	entries, err := os.ReadDir(filepath.Clean(dir + "."))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasPrefix(n, stem+"-") || !strings.HasSuffix(n, ext) || n == base {
			continue
		}
		when := strings.TrimSuffix(strings.TrimPrefix(n, stem+"-"), ext)
		if len(when) < len(backupTimePrefix) {
			continue
		}
		if _, err := time.Parse(backupTimePrefix, when[:len(backupTimePrefix)]); err != nil {
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	slices.Sort(out)
	return out
}

// backupTimePrefix is the part every backup name's time starts with.
const backupTimePrefix = "2006-01-02T15-04-05"

// sniffBytes is how much of a file detect reads.
const sniffBytes = 64 << 10

// detect reads the start of path: its first line that opens a JSON object
// decides. An object with "resourceSpans" is OTLP/JSON; anything else
// (console spans, log lines, an empty file) is read as console output,
// which passes over what is not a span.
func detect(path string) (file, error) {
	f, err := os.Open(path)
	if err != nil {
		return file{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return file{}, err
	}
	if st.IsDir() {
		return file{}, fmt.Errorf("%s is a directory", path)
	}
	out := file{path: path, format: formatConsole, size: st.Size()}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return file{}, fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(head[:n]))
	sc.Buffer(nil, sniffBytes)
	for sc.Scan() {
		_, rest := splitPrefix(sc.Bytes())
		rest = bytes.TrimSpace(rest)
		if len(rest) == 0 || rest[0] != '{' {
			continue
		}
		if bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t"), []byte(`"resourceSpans"`)) {
			out.format = formatOTLPJSON
		}
		break
	}
	// A first line longer than sniffBytes ends the scan: such a line is a
	// file exporter's batch more likely than a console span.
	if errors.Is(sc.Err(), bufio.ErrTooLong) && bytes.HasPrefix(bytes.TrimSpace(head[:n]), []byte(`{"resourceSpans"`)) {
		out.format = formatOTLPJSON
	}
	return out, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
