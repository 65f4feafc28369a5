// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"os"
	"path/filepath"
	"strings"
)

// Gym's settings that a traced run needs (design §6): Gym reads them only
// from its config or its command line, as Hydra-style overrides.
const (
	observabilityKey = "observability_enabled"
	captureDirKey    = "model_call_capture_dir"
	defaultCapture   = "./captures"
)

// isGymCLI: program is Gym's CLI, `gym` or one of its `ng_*` (`nemo_gym_*`)
// entry points.
func isGymCLI(program string) bool {
	base := filepath.Base(program)
	return base == "gym" || strings.HasPrefix(base, "ng_") || strings.HasPrefix(base, "nemo_gym_")
}

// gymSetting is the value of key among Gym's overrides (key=v, +key=v,
// ++key=v), and whether it is there.
func gymSetting(args []string, key string) (string, bool) {
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimLeft(a, "+"), "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// gymOutputArg is the path Gym writes its output to (`--output PATH`,
// `-o PATH`, `--output=PATH`, or the override output=PATH), "" when none is
// given.
func gymOutputArg(args []string) string {
	for i, a := range args {
		switch {
		case (a == "--output" || a == "-o") && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "--output="):
			return strings.TrimPrefix(a, "--output=")
		}
	}
	v, _ := gymSetting(args, "output")
	return v
}

// runPlan is what a traced run writes where: the capture dir the
// collector and Gym share, Gym's output, and the overrides added to Gym's
// command line.
type runPlan struct {
	captureDir string   // absolute
	gymOutput  string   // absolute, "" when the command names none
	overrides  []string // added to the command's arguments
}

// planRun reads the command's arguments: the capture dir is Gym's
// model_call_capture_dir when the command gives it, else
// $NEMO_GYM_CAPTURE_DIR, else ./captures, made absolute. gym: the command is
// Gym's CLI and its missing settings are added.
func planRun(args []string, gym bool) (runPlan, error) {
	var p runPlan
	dir, given := "", false
	if gym {
		dir, given = gymSetting(args, captureDirKey)
	}
	if !given {
		dir = os.Getenv("NEMO_GYM_CAPTURE_DIR")
	}
	if dir == "" {
		dir = defaultCapture
	}
	var err error
	if p.captureDir, err = filepath.Abs(dir); err != nil {
		return p, err
	}
	if out := gymOutputArg(args); gym && out != "" {
		if p.gymOutput, err = filepath.Abs(out); err != nil {
			return p, err
		}
	}
	if !gym {
		return p, nil
	}
	if _, ok := gymSetting(args, observabilityKey); !ok {
		p.overrides = append(p.overrides, "++"+observabilityKey+"=true")
	}
	if !given {
		p.overrides = append(p.overrides, "++"+captureDirKey+"="+p.captureDir)
	}
	return p, nil
}
