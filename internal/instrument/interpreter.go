// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// pythonName is the file name of a Python interpreter: python, python3,
// python3.13.
var pythonName = regexp.MustCompile(`^python[0-9]*(\.[0-9]+)?$`)

// pipLauncher starts the second line of the launcher pip writes when the
// interpreter's path is too long for a shebang or has a space.
const pipLauncher = `'''exec' `

// pythonOf returns the Python interpreter that runs program (a path, as
// exec.LookPath found it): program itself when it is one, else the
// interpreter its shebang names (a console script such as Gym's `gym`,
// `#!/venv/bin/python`; pip's launcher for long paths, `#!/bin/sh` then
// `”'exec' /venv/bin/python "$0" "$@"`, the path in double quotes when it
// has a space; or `#!/usr/bin/env python3`, looked up in PATH). ok is false
// for anything else (an ELF binary, a shell script).
func pythonOf(program string) (python string, ok bool) {
	if pythonName.MatchString(filepath.Base(program)) {
		return program, true
	}
	f, err := os.Open(program)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := f.Read(head)
	return shebangPython(head[:n])
}

// shebangPython reads the interpreter from the first lines of a script.
func shebangPython(head []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(head))
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "#!") {
		return "", false
	}
	fields := strings.Fields(strings.TrimPrefix(sc.Text(), "#!"))
	if len(fields) == 0 {
		return "", false
	}
	interp, args := fields[0], fields[1:]
	switch filepath.Base(interp) {
	case "env":
		for len(args) > 0 && strings.HasPrefix(args[0], "-") {
			args = args[1:] // env -S
		}
		if len(args) == 0 || !pythonName.MatchString(args[0]) {
			return "", false
		}
		p, err := exec.LookPath(args[0])
		return p, err == nil
	case "sh":
		if !sc.Scan() {
			return "", false
		}
		rest, found := strings.CutPrefix(sc.Text(), pipLauncher)
		if !found {
			return "", false
		}
		var p string
		if quoted, ok := strings.CutPrefix(rest, `"`); ok {
			p, _, _ = strings.Cut(quoted, `"`)
		} else if f := strings.Fields(rest); len(f) > 0 {
			p = f[0]
		}
		return p, pythonName.MatchString(filepath.Base(p))
	}
	return interp, pythonName.MatchString(filepath.Base(interp))
}
