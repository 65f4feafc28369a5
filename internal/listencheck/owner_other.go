// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !linux

package listencheck

// owner is not known outside Linux (no /proc to read).
func owner(string) string { return "" }
