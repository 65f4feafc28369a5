// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// captureLine is one model exchange as Gym's CaptureStore writes it into
// <model_call_capture_dir>/<rollout_id>.capture.jsonl. It holds no trace or
// span id: captures join traces only through the rollout id.
type captureLine struct {
	ModelCallID   string          `json:"model_call_id"`
	Dialect       string          `json:"dialect"`
	ModelRef      captureModelRef `json:"model_ref"`
	StartedAt     float64         `json:"started_at"`
	CompletedAt   float64         `json:"completed_at"`
	LatencyMS     float64         `json:"latency_ms"`
	LatencyTTFTMS float64         `json:"latency_ttft_ms"`
	StatusCode    int             `json:"status_code"`
	ErrorCategory *string         `json:"error_category"`
	Request       any             `json:"request"`
	Response      any             `json:"response"`
}

type captureModelRef struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// captureStore appends capture lines, each under an exclusive flock as Gym
// does, so several model servers can share the directory.
type captureStore struct {
	dir string
}

// write appends line to the rollout's capture file. The rollout id comes from
// a URL: it becomes a file name only when it matches Gym's pattern.
func (s *captureStore) write(rollout string, line *captureLine) error {
	if s == nil || s.dir == "" {
		return nil
	}
	if !validRolloutID(rollout) {
		return fmt.Errorf("rollout id %q is not a valid file name", rollout)
	}
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encoding a capture line: %w", err)
	}
	b = append(b, '\n')
	path := filepath.Join(s.dir, rollout+".capture.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("opening the capture file: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking the capture file: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("writing the capture file: %w", err)
	}
	return nil
}

// newModelCallID is a uuid4().hex lookalike.
func newModelCallID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// simUsage is the usage block an OpenAI-compatible model puts in a response
// (the responses dialect's names): made-up token counts, which the e2e tests
// and the benchmark sum from the capture files to check the collector's.
func simUsage() map[string]any {
	in, out := 20+mathrand.IntN(480), 1+mathrand.IntN(120)
	return map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out}
}

// simTTFT is the time to first token of a call that took latency ms: a
// streamed answer's first token comes about a quarter of the way in.
func simTTFT(latency float64) float64 {
	return float64(int64(latency*250)) / 1000
}
