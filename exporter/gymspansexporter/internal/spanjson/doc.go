// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package spanjson holds the gymspans exporter's line encoders (design
// §5.2): append-style functions that write a span, its resource and scope
// as a console line (console.go, Python's ReadableSpan.to_json plus flat
// fields) or as an OTLP/JSON request (otlpjson.go), without allocating
// beyond the caller's buffer. json.go holds what both share (strings,
// doubles), times.go the text of times and the per-batch TimeCache,
// service.go how a resource's service is shown. The exporter decides what
// goes where; this package only encodes.
package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"
