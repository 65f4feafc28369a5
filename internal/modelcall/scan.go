// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of objects and arrays a line may have,
// encoding/json's own bound: a line nested deeper is refused as it would be.
const maxDepth = 10000

var errSyntax = errors.New("not a JSON value")

// scanner reads the named fields of one capture line in a single pass and
// checks the rest of the line is JSON without keeping any of it. The rules
// are those of decoding the line into a generic value with encoding/json
// and reading the fields from it: keys match exactly, the last of a
// repeated key wins (its whole value), a value of another type than Gym
// writes leaves its field unset, strings are decoded as encoding/json does.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// scanLine reads line into r; false when it is not one JSON object.
func scanLine(line []byte, r *rawLine) bool {
	s := scanner{b: line}
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	if s.object(r.topField) != nil {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads an object at s.i, handing each key to field, which reads
// (or skips) the key's value.
func (s *scanner) object(field func(s *scanner, key []byte) error) error {
	if err := s.enter('{'); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.space()
		key, err := s.key()
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.space()
		if err := field(s, key); err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// array reads an array at s.i, handing each element to elem.
func (s *scanner) array(elem func(s *scanner) error) error {
	if err := s.enter('['); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.space()
		if err := elem(s); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

func (s *scanner) enter(open byte) error {
	if s.i >= len(s.b) || s.b[s.i] != open {
		return errSyntax
	}
	s.i++
	s.depth++
	if s.depth > maxDepth {
		return errSyntax
	}
	return nil
}

// next passes the comma after a member, or the closing byte (done).
func (s *scanner) next(closing byte) (bool, error) {
	s.space()
	if s.i >= len(s.b) {
		return false, errSyntax
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		s.depth--
		return true, nil
	}
	return false, errSyntax
}

// key is an object's key, decoded only when it holds an escape.
func (s *scanner) key() ([]byte, error) {
	start := s.i
	escaped, err := s.stringToken()
	if err != nil {
		return nil, err
	}
	tok := s.b[start:s.i]
	if !escaped {
		return tok[1 : len(tok)-1], nil
	}
	var k string
	if err := json.Unmarshal(tok, &k); err != nil {
		return nil, errSyntax
	}
	return []byte(k), nil
}

// stringToken passes a string at s.i; escaped reports a backslash in it.
func (s *scanner) stringToken() (escaped bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false, errSyntax
	}
	for i := s.i + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return escaped, nil
		case c == '\\':
			escaped = true
			n, ok := escapeLen(s.b[i+1:])
			if !ok {
				return false, errSyntax
			}
			i += n
		case c < 0x20:
			return false, errSyntax
		}
	}
	return false, errSyntax
}

// escapeLen is the length of the escape after a backslash.
func escapeLen(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1, true
	case 'u':
		if len(b) < 5 {
			return 0, false
		}
		for _, h := range b[1:5] {
			if !isHex(h) {
				return 0, false
			}
		}
		return 5, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str reads a string leaf into v; a value of another type is skipped and
// leaves v unset.
func (s *scanner) str(v *jsonStr) error {
	*v = jsonStr{}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return s.skip()
	}
	start := s.i
	escaped, err := s.stringToken()
	if err != nil {
		return err
	}
	tok := s.b[start:s.i]
	if body := tok[1 : len(tok)-1]; !escaped && utf8.Valid(body) {
		*v = jsonStr{v: string(body), ok: true}
		return nil
	}
	// Escapes or invalid UTF-8: encoding/json's decoding of the string.
	var out string
	if err := json.Unmarshal(tok, &out); err != nil {
		return errSyntax
	}
	*v = jsonStr{v: out, ok: true}
	return nil
}

// num reads a number leaf into v; a value of another type is skipped and
// leaves v unset, as does a number out of float64's range.
func (s *scanner) num(v *jsonNum) error {
	*v = jsonNum{}
	if s.i >= len(s.b) || (s.b[s.i] != '-' && (s.b[s.i] < '0' || s.b[s.i] > '9')) {
		return s.skip()
	}
	start := s.i
	if err := s.numberToken(); err != nil {
		return err
	}
	tok := s.b[start:s.i]
	if f, ok := smallInt(tok); ok {
		*v = jsonNum{v: f, ok: true}
	} else if f, err := strconv.ParseFloat(string(tok), 64); err == nil {
		*v = jsonNum{v: f, ok: true}
	}
	return nil
}

// smallInt is a token of at most 15 digits without sign, fraction or
// exponent, read without strconv (exactly as ParseFloat reads it).
func smallInt(tok []byte) (float64, bool) {
	if len(tok) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return float64(n), true
}

// numberToken passes a number at s.i (JSON's grammar).
func (s *scanner) numberToken() error {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return errSyntax
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return errSyntax
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return errSyntax
		}
		i = j
	}
	s.i = i
	return nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// skip passes any value at s.i, checking it is JSON.
func (s *scanner) skip() error {
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, err := s.stringToken()
		return err
	case c == '{':
		return s.object(func(s *scanner, _ []byte) error { return s.skip() })
	case c == '[':
		return s.array((*scanner).skip)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.numberToken()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return nil
		}
	}
	return errSyntax
}

// objectOf reads an object value into the fields field reads, after
// clearing them (reset): a value of another type is skipped, leaving them
// clear.
func (s *scanner) objectOf(reset func(), field func(s *scanner, key []byte) error) error {
	reset()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		return s.object(field)
	}
	return s.skip()
}
