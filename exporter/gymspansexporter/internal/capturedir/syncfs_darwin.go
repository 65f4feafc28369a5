// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package capturedir // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/capturedir"

import (
	"math"

	"golang.org/x/sys/unix"
)

// syncfsThreshold: darwin has no syncfs(2), so a flush fsyncs every file it
// owes, however many (evicted ones reopened within the descriptor bound).
const syncfsThreshold = math.MaxInt

// syncfs is never reached on darwin (no flush owes more than
// syncfsThreshold files); it fails rather than pretend to have synced.
func syncfs(int) error { return unix.ENOTSUP }
