// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The telemetry a Python can give a Gym process (otelcol_gym_instrument/choice.py).
const (
	telemetryGym     = "gym"     // Gym's own, through the installed nemo-lens
	telemetryBridge  = "bridge"  // Gym's own, through otelcol-gym's nemo-lens bridge
	telemetryGeneric = "generic" // OpenTelemetry's FastAPI, ASGI and aiohttp-client instrumentation
	telemetryOff     = "off"     // OpenTelemetry packages missing
	telemetryNotGym  = "notgym"  // no nemo_gym in this Python
)

// probeTimeout bounds the probe: a Python start-up and the imports of
// nemo-lens and the OpenTelemetry API, on a loaded machine.
const probeTimeout = time.Minute

// choice is what the probe printed.
type choice struct {
	Telemetry     string `json:"telemetry"`
	Summary       string `json:"summary"`
	Gym           string `json:"gym"`
	Lens          string `json:"lens"`
	Python        string `json:"python"`
	PythonVersion string `json:"python_version"`
}

// probe runs choice.decide in python (python -B: it writes no bytecode next
// to what it imports) with env, the command's environment, and the requested
// telemetry. dir is the private dir the Python side was written into.
func probe(python, dir, requested string, env []string) (choice, error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-B", filepath.Join(dir, pythonDirName, probeScript))
	cmd.Env = append(slices.Clip(env), requestedEnv+"="+requested)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return choice{}, fmt.Errorf("probing %s: %w: %s", python, err, lastLine(stderr.String()))
	}
	var c choice
	if err := json.Unmarshal(stdout.Bytes(), &c); err != nil {
		return choice{}, fmt.Errorf("probing %s: %w in %q", python, err, lastLine(stdout.String()))
	}
	return c, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
