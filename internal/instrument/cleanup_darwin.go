// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

// watchExit returns what waits for pid's exit: darwin has no pidfd, so
// waitReparented (pid is this process's parent).
func watchExit(pid int) func() {
	return func() { waitReparented(pid) }
}
