// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Output formats the harness reads span ids from.
const (
	fmtOTLP    = "otlp"    // OTLP/JSON, one ExportTraceServiceRequest per line (fileexporter json, gymspans otlp_json)
	fmtConsole = "console" // gymspans console lines, one span per line
)

var (
	keySpanIDFlat = []byte(`"span_id":"`)
	keySpanIDOTLP = []byte(`"spanId":"`)
	keyName       = []byte(`"name":`)
	markSynthetic = []byte(`"nemo.gym.synthetic":true`)
)

// lineSpans calls f with the id of every span in one output line. Span ids
// are found by their keys, not by a full JSON decode, so the harness can keep
// up with the collector: in a console line the flat "span_id" (16 hex digits,
// no 0x: the context's copy has 0x); in an OTLP/JSON line every "spanId"
// whose object goes on to a "name" before it opens or closes an object (link
// objects have "spanId" but no "name"). synthetic is known for console lines
// only (the nemo.gym.synthetic attribute); OTLP lines report false.
func lineSpans(format string, line []byte, f func(id uint64, synthetic bool)) {
	switch format {
	case fmtConsole:
		var id uint64
		found := false
		rest := line
		for {
			i := bytes.Index(rest, keySpanIDFlat)
			if i < 0 {
				break
			}
			rest = rest[i+len(keySpanIDFlat):]
			if v, ok := hex16(rest); ok {
				id, found = v, true
			}
		}
		if found {
			f(id, bytes.Contains(line, markSynthetic))
		}
	case fmtOTLP:
		rest := line
		for {
			i := bytes.Index(rest, keySpanIDOTLP)
			if i < 0 {
				return
			}
			rest = rest[i+len(keySpanIDOTLP):]
			v, ok := hex16(rest)
			if !ok {
				continue
			}
			after := rest[17:]
			n := bytes.Index(after, keyName)
			b := bytes.IndexAny(after, "{}")
			if n >= 0 && (b < 0 || n < b) {
				f(v, false)
			}
		}
	}
}

// hex16 parses 16 lowercase hex digits followed by a quote.
func hex16(b []byte) (uint64, bool) {
	if len(b) < 17 || b[16] != '"' {
		return 0, false
	}
	var raw [8]byte
	if _, err := hex.Decode(raw[:], b[:16]); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(raw[:]), true
}

// outputFile says whether a file in a run's output dir holds spans, and in
// which format. rollouts.jsonl, service_map.* and temporary files do not.
func outputFile(pipeline, name string) (string, bool) {
	switch pipeline {
	case "A", "B":
		return fmtOTLP, strings.HasPrefix(name, "spans") && strings.HasSuffix(name, ".json")
	case "C", "C0", "Cs", "Cg", "Cj", "Cj0", "Cn":
		// The combined file and its rotated backups hold every span once; the
		// per-rollout files repeat the spans of a rollout.
		return fmtConsole, name == "spans.jsonl" || (strings.HasPrefix(name, "spans-") && strings.HasSuffix(name, ".jsonl"))
	case "Cr", "Csr":
		// combined_spans rest: the combined file holds the spans in no
		// rollout file, the per-rollout files the others, each once.
		return fmtConsole, name == "spans.jsonl" || strings.HasSuffix(name, ".spans.jsonl") || (strings.HasPrefix(name, "spans-") && strings.HasSuffix(name, ".jsonl"))
	case "C'":
		return fmtOTLP, strings.HasSuffix(name, ".spans.jsonl")
	case "G":
		return fmtOTLP, strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".json")
	}
	return "", false
}

// spanCount is what a full read of a run's output found.
type spanCount struct {
	Found          int // distinct span ids (expected ones when an expected set is given)
	FoundInRollout int // of those, the ones the expected set places in a rollout
	Distinct       int // distinct non-synthetic span ids, expected or not
	Duplicates     int // span lines seen more than once
	Synthetic      int // spans the gym processor synthesized (console only)
	Unexpected     int // ids not in the expected set (synthetic excluded)
}

// countOutput reads every span file in dir. With expected, Found counts the
// expected ids seen and Unexpected the others.
func countOutput(pipeline, dir string, expected map[uint64]uint8) (spanCount, error) {
	var c spanCount
	seen := map[uint64]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return c, err
	}
	for _, e := range entries {
		format, ok := outputFile(pipeline, e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return c, err
		}
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				// A long OTLP line: gather it whole.
				full := append([]byte(nil), line...)
				for err == bufio.ErrBufferFull {
					line, err = r.ReadSlice('\n')
					full = append(full, line...)
				}
				line = full
			}
			if len(line) > 0 {
				lineSpans(format, line, func(id uint64, synthetic bool) {
					switch {
					case synthetic:
						c.Synthetic++
					case seen[id]:
						c.Duplicates++
					default:
						seen[id] = true
						c.Distinct++
						if expected == nil {
							c.Found++
						} else if cl, ok := expected[id]; ok {
							c.Found++
							if cl != classNone {
								c.FoundInRollout++
							}
						} else {
							c.Unexpected++
						}
					}
				})
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				_ = f.Close()
				return c, fmt.Errorf("reading %s: %w", e.Name(), err)
			}
		}
		_ = f.Close()
	}
	return c, nil
}
