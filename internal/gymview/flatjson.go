// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// parseRolloutLine reads one rollouts.jsonl line. Listing a run of 100,000
// rollouts starts by reading 100,000 lines, and encoding/json spends most of
// that time on reflection, so the flat objects gymspans writes (string and
// integer members, no escapes) are read by decodeFlat; any other line is
// given to encoding/json, whose answer is the reference (FuzzRolloutLine
// holds the two to the same result).
func parseRolloutLine(line []byte) (rolloutLine, bool) {
	var l rolloutLine
	if decodeFlat(line, l.set) {
		return l, true
	}
	l = rolloutLine{}
	if err := json.Unmarshal(line, &l); err != nil {
		return rolloutLine{}, false
	}
	return l, true
}

// set stores one member; it reports false for a value encoding/json would
// read differently (or refuse).
func (l *rolloutLine) set(key, val []byte, isString bool) bool {
	var dst *string
	switch string(key) {
	case "rollout_id":
		dst = &l.RolloutID
	case "run_id":
		dst = &l.RunID
	case "trace_id":
		dst = &l.TraceID
	case "root_span_id":
		dst = &l.RootSpanID
	case "start_time":
		dst = &l.StartTime
	case "end_time":
		dst = &l.EndTime
	case "status":
		dst = &l.Status
	case "service_name":
		dst = &l.ServiceName
	case "name":
		dst = &l.Name
	case "error_count":
		if isString {
			return false
		}
		n, err := strconv.Atoi(string(val))
		if err != nil {
			return false
		}
		l.ErrorCount = n
		return true
	default:
		// encoding/json matches names without regard to case.
		for _, k := range rolloutLineKeys {
			if bytes.EqualFold(k, key) {
				return false
			}
		}
		return true
	}
	if !isString {
		return string(val) == "null" // null leaves a string as it is
	}
	*dst = string(val)
	return true
}

var rolloutLineKeys = [][]byte{[]byte("rollout_id"), []byte("run_id"), []byte("trace_id"), []byte("root_span_id"), []byte("start_time"),
	[]byte("end_time"), []byte("status"), []byte("error_count"), []byte("service_name"), []byte("name")}

// decodeFlat walks a JSON object whose members are strings without escapes,
// integers, true, false or null, calling set for each. It reports false,
// leaving the line to encoding/json, on anything else: a nested value, an
// escape, a fraction or exponent, invalid UTF-8, or a set that declines.
func decodeFlat(b []byte, set func(key, val []byte, isString bool) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		var val []byte
		isString := b[i] == '"'
		if isString {
			val, next, ok = plainString(b, i)
		} else {
			val, next, ok = plainLiteral(b, i)
		}
		if !ok || !set(key, val, isString) {
			return false
		}
		i = skipSpace(b, next)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a string at b[i] with no escape and no control byte;
// it returns its contents and the index after the closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

var literals = [][]byte{[]byte("true"), []byte("false"), []byte("null")}

// plainLiteral reads an integer, true, false or null at b[i].
func plainLiteral(b []byte, i int) ([]byte, int, bool) {
	for _, lit := range literals {
		if bytes.HasPrefix(b[i:], lit) {
			return b[i : i+len(lit)], i + len(lit), true
		}
	}
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == digits || (b[digits] == '0' && j-digits > 1) {
		return nil, 0, false // no digits, or a leading zero
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return nil, 0, false
	}
	return b[i:j], j, true
}
