// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// gymFile is one JSON-lines file of Gym's output read incrementally: each
// refresh reads the rows appended since the last one (Gym appends a row as
// each rollout ends), or, for a file Gym writes whole (whole), the file
// again whenever it changed. A replaced or truncated file is read again
// from the start.
type gymFile struct {
	name  fileName
	whole bool

	dev, ino uint64
	size     int64
	mtimeNS  int64
	offset   int64

	present   bool
	rows      int // rows read and kept
	malformed int // rows skipped: not JSON objects, or without a rollout id
	err       string
}

// gymFileStatus is what the run page says of one file.
type gymFileStatus struct {
	Name      string `json:"name"`
	Present   bool   `json:"present"`
	Rows      int    `json:"rows"`
	Malformed int    `json:"malformed"`
	Error     string `json:"error,omitempty"`
}

func (f *gymFile) status() gymFileStatus {
	return gymFileStatus{Name: f.name.s, Present: f.present, Rows: f.rows, Malformed: f.malformed, Error: f.err}
}

// refresh reads what the file gained. keep names the members each row
// keeps; reset is called before the file is read again from its start;
// row takes one row's kept members and reports false for a row it cannot
// use. It reports whether any row was read.
func (f *gymFile) refresh(dir *captureDir, keep func(string) bool, reset func(), row func(map[string][]byte) bool) (bool, error) {
	file, st, err := dir.open(f.name)
	if errors.Is(err, fs.ErrNotExist) {
		changed := f.present || f.offset > 0
		if changed {
			reset()
		}
		*f = gymFile{name: f.name, whole: f.whole}
		return changed, nil
	}
	if err != nil {
		f.err = err.Error()
		return false, err
	}
	defer file.Close()
	f.present, f.err = true, ""
	dev, ino := fileIdentity(st)
	mtime := st.ModTime().UnixNano()
	same := dev == f.dev && ino == f.ino && st.Size() >= f.offset
	if f.whole {
		same = same && st.Size() == f.size && mtime == f.mtimeNS
		if same {
			return false, nil
		}
	}
	if !same {
		reset()
		f.offset, f.rows, f.malformed = 0, 0, 0
	}
	f.dev, f.ino, f.size, f.mtimeNS = dev, ino, st.Size(), mtime
	if st.Size() == f.offset {
		return !same, nil
	}
	r := newRowReader(io.NewSectionReader(file, f.offset, st.Size()-f.offset), keep)
	read := false
	for {
		m, err := r.next()
		switch {
		case err == nil:
			read = true
			if row(m) {
				f.rows++
			} else {
				f.malformed++
			}
			continue
		case errors.Is(err, errSyntax):
			read = true
			f.malformed++
			continue
		case errors.Is(err, io.EOF) || errors.Is(err, errIncomplete):
			err = nil
		default:
			err = fmt.Errorf("reading %s: %w", f.name.s, err)
		}
		f.offset += r.consumed()
		return read || !same, err
	}
}
