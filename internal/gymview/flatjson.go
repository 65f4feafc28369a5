// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
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

// rolloutLineFields maps each json name of rolloutLine to its field.
var rolloutLineFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[rolloutLine]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = i
	}
	return m
}()

// set stores one member; it reports false for a value encoding/json would
// read differently (or refuse).
func (l *rolloutLine) set(key, val []byte, isString bool) bool {
	i, known := rolloutLineFields[string(key)]
	if !known {
		// encoding/json matches names without regard to case.
		for name := range rolloutLineFields {
			if bytes.EqualFold([]byte(name), key) {
				return false
			}
		}
		return true
	}
	f := reflect.ValueOf(l).Elem().Field(i)
	switch f.Kind() {
	case reflect.String:
		if !isString {
			return string(val) == "null" // null leaves a string as it is
		}
		f.SetString(string(val))
	case reflect.Slice: // json.RawMessage: the value's JSON text
		if isString {
			return false
		}
		f.SetBytes(bytes.Clone(val))
	case reflect.Int:
		if isString {
			return false
		}
		n, err := strconv.Atoi(string(val))
		if err != nil {
			return false
		}
		f.SetInt(int64(n))
	default:
		return false
	}
	return true
}

// decodeFlat walks a JSON object whose members are strings without escapes,
// numbers, true, false, null, or objects of those (a rollouts.jsonl line's
// time_split_ms), calling set for each; an object member is passed whole,
// as its JSON text. It reports false, leaving the line to encoding/json, on
// anything else: an array, an escape, deeper nesting, invalid UTF-8, or a
// set that declines.
func decodeFlat(b []byte, set func(key, val []byte, isString bool) bool) bool {
	end, ok := walkFlat(b, skipSpace(b, 0), true, set)
	return ok && skipSpace(b, end) == len(b)
}

// walkFlat walks the object at b[i] and returns the index after it;
// nested allows members that are objects themselves (one level).
func walkFlat(b []byte, i int, nested bool, set func(key, val []byte, isString bool) bool) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return 0, false
		}
		var val []byte
		isString := b[i] == '"'
		switch {
		case isString:
			val, next, ok = plainString(b, i)
		case b[i] == '{' && nested:
			next, ok = walkFlat(b, i, false, func(_, _ []byte, _ bool) bool { return true })
			val = b[i:max(next, i)]
		default:
			val, next, ok = plainLiteral(b, i)
		}
		if !ok || !set(key, val, isString) {
			return 0, false
		}
		i = skipSpace(b, next)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
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

// plainLiteral reads a number (JSON's grammar), true, false or null at b[i].
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
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j = digitsEnd(b, j)
	default:
		return nil, 0, false
	}
	if j < len(b) && b[j] == '.' {
		if j = digitsEnd(b, j+1); b[j-1] == '.' {
			return nil, 0, false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digitsEnd(b, j)
		if k == j {
			return nil, 0, false
		}
		j = k
	}
	return b[i:j], j, true
}

// digitsEnd is the index after the digits at b[j].
func digitsEnd(b []byte, j int) int {
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return j
}
