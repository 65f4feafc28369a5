// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymscoresextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymscoresextension"

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ackedFile is where the scores a backend acknowledged are remembered,
// under the capture dir: one JSON line per score, appended before the
// score counts as sent. A restart reads it and sends none of them again.
// It names a backend by a hash of its kind and endpoint (an endpoint may
// carry a secret in its user info); no header is written.
const ackedFile = ".gymscores/acked.jsonl"

// ackedLine is a line of ackedFile.
type ackedLine struct {
	Backend string `json:"backend"`
	TraceID string `json:"trace_id"`
	Name    string `json:"name"`
	Value   string `json:"value"`
}

// acked is the set of acknowledged scores of one backend. One goroutine
// owns it.
type acked struct {
	path    string
	backend string
	keys    map[string]bool
}

// backendID names a backend in ackedFile.
func backendID(kind, endpoint string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + endpoint))
	return hex.EncodeToString(h[:8])
}

// loadAcked reads what captureDir's ackedFile holds for backend; a missing
// file holds nothing, a malformed line is skipped.
func loadAcked(captureDir, backend string) (*acked, error) {
	a := &acked{path: filepath.Join(captureDir, ackedFile), backend: backend, keys: map[string]bool{}}
	f, err := os.OpenFile(a.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the scores sent before: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l ackedLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Backend == backend {
			a.keys[l.TraceID+" "+l.Name+" "+l.Value] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", a.path, err)
	}
	return a, nil
}

func (a *acked) has(key string) bool { return a.keys[key] }

// add remembers s as acknowledged: in memory always, in the file when it
// can be written (an error says why it was not: the score may then be sent
// again after a restart).
func (a *acked) add(s score) error {
	a.keys[s.key()] = true
	line, err := json.Marshal(ackedLine{Backend: a.backend, TraceID: s.TraceID, Name: s.Name, Value: s.value()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(a.path), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}
