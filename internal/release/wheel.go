// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// The Python distribution: its name, and the normalized form its files take
// (the binary/wheel format specification's escaping of "-").
const (
	pythonName     = "otelcol-gym"
	pythonFileName = "otelcol_gym"
	binaryName     = "otelcol-gym"
	summary        = "OpenTelemetry Collector distribution for NeMo Gym: the otelcol-gym binary, on the venv's PATH"
)

// wheel is the Python wheel of one binary.
type wheel struct {
	version     string
	platformTag string // compressed, e.g. manylinux_2_17_x86_64.manylinux2014_x86_64
	binary      []byte
	license     []byte
	modified    time.Time // every entry's time
}

// tags are the wheel's tags, one per platform of the compressed platform tag.
func (w wheel) tags() []string {
	var tags []string
	for _, p := range strings.Split(w.platformTag, ".") {
		tags = append(tags, "py3-none-"+p)
	}
	return tags
}

func (w wheel) fileName() string {
	return fmt.Sprintf("%s-%s-py3-none-%s.whl", pythonFileName, w.version, w.platformTag)
}

func (w wheel) dataDir() string { return fmt.Sprintf("%s-%s.data", pythonFileName, w.version) }
func (w wheel) infoDir() string { return fmt.Sprintf("%s-%s.dist-info", pythonFileName, w.version) }

// scriptPath is where the binary is in the wheel: installers copy
// <name>.data/scripts/ to the environment's bin/ (Scripts\ on Windows).
func (w wheel) scriptPath() string { return w.dataDir() + "/scripts/" + binaryName }

func (w wheel) metadata() []byte {
	return fmt.Appendf(nil, `Metadata-Version: 2.4
Name: %s
Version: %s
Summary: %s
License-Expression: Apache-2.0
License-File: LICENSE
Description-Content-Type: text/markdown

# otelcol-gym %s

The otelcol-gym binary: an OpenTelemetry Collector distribution for NeMo
Gym. Installed into a venv, `+"`otelcol-gym`"+` is on the venv's PATH;
`+"`otelcol-gym --version`"+` says the commit it was built from.
`, pythonName, w.version, summary, w.version)
}

func (w wheel) wheelFile() []byte {
	b := []byte("Wheel-Version: 1.0\nGenerator: otelcol-gym internal/release\nRoot-Is-Purelib: false\n")
	for _, t := range w.tags() {
		b = fmt.Appendf(b, "Tag: %s\n", t)
	}
	return b
}

// wheelEntry is one file of a wheel.
type wheelEntry struct {
	name string
	mode uint32
	data []byte
}

// entries are the wheel's files but RECORD, sorted by name.
func (w wheel) entries() []wheelEntry {
	return []wheelEntry{
		{w.scriptPath(), 0o755, w.binary},
		{w.infoDir() + "/METADATA", 0o644, w.metadata()},
		{w.infoDir() + "/WHEEL", 0o644, w.wheelFile()},
		{w.infoDir() + "/licenses/LICENSE", 0o644, w.license},
	}
}

// recordHash is a RECORD line's hash of data.
func recordHash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// write writes the wheel: its entries in sorted order, then RECORD (last, as
// the wheel format recommends), each with the same time and a fixed mode.
func (w wheel) write(out io.Writer) error {
	zw := zip.NewWriter(out)
	var record bytes.Buffer
	entries := w.entries()
	for _, e := range entries {
		fmt.Fprintf(&record, "%s,%s,%d\n", e.name, recordHash(e.data), len(e.data))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", w.infoDir())
	entries = append(entries, wheelEntry{w.infoDir() + "/RECORD", 0o644, record.Bytes()})
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: zipTime(w.modified)}
		h.SetMode(fs.FileMode(e.mode))
		f, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// zipTime is t in UTC, no earlier than 1980, the first time a zip's MS-DOS
// fields can hold (Python's zipfile refuses earlier ones).
func zipTime(t time.Time) time.Time {
	if first := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC); t.Before(first) {
		return first
	}
	return t.UTC()
}
