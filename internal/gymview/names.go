// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"strings"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// File name suffixes of a rollout's files in the capture dir.
const (
	spansSuffix   = ".spans.jsonl"   // written by gymspans
	captureSuffix = ".capture.jsonl" // written by Gym's model servers
)

// fileName is a name inside the capture dir that passed the rule: the only
// kind of name captureDir.open accepts, so a request parameter becomes a
// path only through rolloutFile.
type fileName struct{ s string }

// The capture dir's fixed files (the gymspans defaults).
var (
	rolloutsFile   = fileName{"rollouts.jsonl"}
	serviceMapFile = fileName{"service_map.json"}
	// metricsFile is where the standalone shape writes the metrics, the
	// GenAI metrics of design §4.7 among them.
	metricsFile = fileName{"otel-metrics.jsonl"}
)

// rolloutFile is the name of rollout id's file with suffix, or false when id
// does not pass the rule.
func rolloutFile(id, suffix string) (fileName, bool) {
	if !gymconv.SafeFileID(id) {
		return fileName{}, false
	}
	return fileName{id + suffix}, true
}

// rolloutOfSpansFile is the rollout id of a directory entry named
// <id>.spans.jsonl, or false.
func rolloutOfSpansFile(name string) (string, bool) { return rolloutOfFile(name, spansSuffix) }

// rolloutOfCaptureFile is the rollout id of a directory entry named
// <id>.capture.jsonl, or false.
func rolloutOfCaptureFile(name string) (string, bool) { return rolloutOfFile(name, captureSuffix) }

func rolloutOfFile(name, suffix string) (string, bool) {
	id, ok := strings.CutSuffix(name, suffix)
	if !ok || !gymconv.SafeFileID(id) {
		return "", false
	}
	return id, true
}
