// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// writeSummary says what a replay did, what it skipped and dropped, and
// how to look at it.
func writeSummary(w io.Writer, res *result) {
	fmt.Fprintf(w, "otelcol-gym replay: %d spans read from %s (%s) in %s (%s spans/s); %d spans and %d rollouts written into %s\n",
		res.spansRead, plural(len(res.in.files), "file"), bytesText(res.bytes), res.elapsed.Round(time.Millisecond), rate(res.spansRead, res.elapsed),
		res.spans, res.rollouts, res.out)
	if res.replacedPrevious {
		fmt.Fprintf(w, "  replaced the previous replay's files there (%s lists them)\n", markerFile)
	}
	if res.captures != "" {
		fmt.Fprintf(w, "  model calls joined with Gym's captures in %s (GenAI attributes)\n", res.captures)
	}
	if res.skippedLines > 0 {
		fmt.Fprintf(w, "  skipped %d lines that held no readable span:\n", res.skippedLines)
		for _, s := range res.skipped {
			fmt.Fprintf(w, "    %s\n", s)
		}
		if n := res.skippedLines - int64(len(res.skipped)); n > 0 {
			fmt.Fprintf(w, "    ... and %d more\n", n)
		}
	}
	if res.credentials > 0 {
		fmt.Fprintf(w, "  dropped %d attributes that carry credentials (%s), as a live run does: none of them is written\n",
			res.credentials, strings.Join(res.credentialKeys, ", "))
	}
	fmt.Fprintf(w, "Look at it in the rollout viewer:\n  %s\n", viewCommand(res))
}

func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
