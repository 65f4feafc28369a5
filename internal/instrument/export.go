// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runExport is `otelcol-gym instrument --export`: the settings a command
// would get, as shell lines, for Gym started some other way. The Python side
// is written to --python-dir, or to a new private directory that stays (a
// comment line names it). The choice line is a comment too, so that the
// output can be eval'd as it is.
func runExport(o options, stdout, stderr io.Writer) int {
	dir := o.pythonDir
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", privatePrefix+"*")
	} else {
		dir, err = filepath.Abs(dir)
	}
	if err == nil {
		err = writePythonFiles(dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return 1
	}
	python := o.python
	if python == "" {
		if gym, err := exec.LookPath("gym"); err == nil {
			python, _ = pythonOf(gym)
		}
	}
	var b strings.Builder
	if python == "" {
		fmt.Fprintf(&b, "# otelcol-gym %s: no gym on PATH and no --python: each Gym process decides for itself\n", CommandName)
	} else if c, err := probe(python, dir, o.telemetry, os.Environ()); err != nil {
		fmt.Fprintf(&b, "# otelcol-gym %s: %s\n", CommandName, oneLine(err.Error()))
	} else {
		fmt.Fprintf(&b, "# otelcol-gym %s: %s (%s)\n", CommandName, oneLine(c.Summary), c.Python)
		o.announced = c.Telemetry
	}
	if o.pythonDir == "" {
		fmt.Fprintf(&b, "# the Python side is in %s; remove it when you are done\n", dir)
	}
	o.pythonDir = filepath.Join(dir, pythonDirName)
	b.WriteString(o.exports())
	_, err = io.WriteString(stdout, b.String())
	if err != nil {
		return 1
	}
	return 0
}

// oneLine keeps a comment on one line whatever the text holds.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
