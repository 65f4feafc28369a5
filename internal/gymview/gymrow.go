// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"
)

// Bounds of reading a row of Gym's output.
const (
	// maxMemberBytes bounds one member value kept of a row. A longer string
	// is cut (a failure_reason); a longer object or array is left out.
	maxMemberBytes = 64 << 10
	// maxKeyBytes bounds a member name, decoded; a longer one is never
	// kept. Measured decoded, the rule is the same for every spelling of a
	// name, so a name repeated in a row is kept or left out as a whole.
	maxKeyBytes = 256
	// maxKeyQuoted bounds a member name as written, quotes included: an
	// escape (\u0061) writes one decoded byte in six, so a name within
	// maxKeyBytes is never longer than this.
	maxKeyQuoted = 6*maxKeyBytes + 2
	// maxRowDepth bounds the nesting inside a row's members: with the row's
	// own object, encoding/json's 10,000.
	maxRowDepth = 9999
)

var (
	// errIncomplete: the file ends inside a row (Gym is writing it).
	errIncomplete = errors.New("row without its newline")
	errSyntax     = errors.New("not a JSON object")
)

// rowReader reads the rows of a JSON-lines file of Gym's output member by
// member, keeping only the values of the top-level members keep asks for.
// A row of Gym's rollouts.jsonl holds the rollout's whole responses and
// trajectory, so it may be far larger than anything the viewer keeps:
// whatever its size, the reader holds at most maxMemberBytes of each kept
// member and bufio's buffer. Every row is checked against JSON's grammar,
// so a malformed row is told apart from a good one however long it is.
type rowReader struct {
	br   *bufio.Reader
	keep func(key string) bool

	pos      int64 // bytes read
	rowStart int64 // where the row being read starts
	last     byte  // the last byte read
	stack    []byte
	key      []byte
	val      capture
	members  map[string][]byte
}

func newRowReader(r io.Reader, keep func(key string) bool) *rowReader {
	return &rowReader{br: bufio.NewReaderSize(r, 64<<10), keep: keep, members: map[string][]byte{}}
}

// next reads one row. It returns the kept members (valid until the next
// call) and nil, or errSyntax for a malformed row (which is skipped up to
// its newline), or errIncomplete when the file ends inside a row, or
// io.EOF after the last row. consumed() is then the end of the last
// complete row. A blank line is no row.
func (r *rowReader) next() (map[string][]byte, error) {
	for {
		r.rowStart = r.pos
		clear(r.members)
		err := r.row()
		switch {
		case err == nil:
			return r.members, nil
		case errors.Is(err, errBlank):
			continue
		case errors.Is(err, io.EOF):
			if r.pos == r.rowStart {
				return nil, io.EOF
			}
			r.pos = r.rowStart
			return nil, errIncomplete
		case errors.Is(err, errSyntax):
			if r.last != '\n' {
				if err := r.skipLine(); err != nil {
					r.pos = r.rowStart
					return nil, errIncomplete
				}
			}
			return nil, errSyntax
		default:
			return nil, err
		}
	}
}

// consumed is the offset after the last complete row (or malformed line).
func (r *rowReader) consumed() int64 { return r.pos }

var errBlank = errors.New("blank line")

// row reads `{ "key": value, ... }` and the rest of its line.
func (r *rowReader) row() error {
	c, err := r.space()
	if err != nil {
		return err
	}
	if c == '\n' {
		return errBlank
	}
	if c != '{' {
		return errSyntax
	}
	if c, err = r.space(); err != nil {
		return err
	}
	if c != '}' {
		for {
			if err := r.member(c); err != nil {
				return err
			}
			if c, err = r.space(); err != nil {
				return err
			}
			if c == '}' {
				break
			}
			if c != ',' {
				return errSyntax
			}
			if c, err = r.space(); err != nil {
				return err
			}
		}
	}
	if c, err = r.space(); err != nil {
		return err
	}
	if c != '\n' {
		return errSyntax
	}
	return nil
}

// member reads one member of the row, its opening quote c already read,
// and keeps its value when asked to.
func (r *rowReader) member(c byte) error {
	if c != '"' {
		return errSyntax
	}
	r.key = append(r.key[:0], '"')
	r.val.start(&r.key, maxKeyQuoted)
	if err := r.stringBody(); err != nil {
		return err
	}
	key, ok := r.val.text()
	ok = ok && len(key) <= maxKeyBytes
	r.val.stop()
	c, err := r.space()
	if err != nil {
		return err
	}
	if c != ':' {
		return errSyntax
	}
	// The value's first byte, given back: a kept value starts with it.
	if _, err := r.space(); err != nil {
		return err
	}
	if err := r.unread(); err != nil {
		return err
	}
	if !ok || !r.keep(key) {
		return r.value()
	}
	var b []byte
	r.val.start(&b, maxMemberBytes)
	err = r.value()
	v, ok := r.val.value()
	r.val.stop()
	if err != nil {
		return err
	}
	if ok {
		r.members[key] = v
	}
	return nil
}

// value reads one JSON value (leading space included); while r.val is
// started, its bytes go there.
func (r *rowReader) value() error {
	r.stack = r.stack[:0]
	for {
		c, err := r.space()
		if err != nil {
			return err
		}
		switch {
		case c == '{' || c == '[':
			if len(r.stack) >= maxRowDepth {
				return errSyntax
			}
			r.stack = append(r.stack, c)
			if c, err = r.space(); err != nil {
				return err
			}
			if c == '}' || c == ']' {
				if !r.closes(c) {
					return errSyntax
				}
				break
			}
			if err := r.startElement(c); err != nil {
				return err
			}
			continue
		case c == '"':
			err = r.stringBody()
		case c == 't':
			err = r.literal("true")
		case c == 'f':
			err = r.literal("false")
		case c == 'n':
			err = r.literal("null")
		case c == '-' || (c >= '0' && c <= '9'):
			err = r.number(c)
		default:
			return errSyntax
		}
		if err != nil {
			return err
		}
		// After a value: the end, or a comma or a close of its container.
		for {
			if len(r.stack) == 0 {
				return nil
			}
			if c, err = r.space(); err != nil {
				return err
			}
			if c == ',' {
				if c, err = r.space(); err != nil {
					return err
				}
				if err := r.startElement(c); err != nil {
					return err
				}
				break
			}
			if !r.closes(c) {
				return errSyntax
			}
		}
	}
}

// startElement begins the next element of the innermost container, c its
// first byte: in an object, a key and its colon (the value follows); in an
// array, c is the value's first byte, given back to the reader.
func (r *rowReader) startElement(c byte) error {
	if r.stack[len(r.stack)-1] == '[' {
		return r.unread()
	}
	if c != '"' {
		return errSyntax
	}
	if err := r.stringBody(); err != nil {
		return err
	}
	c, err := r.space()
	if err != nil {
		return err
	}
	if c != ':' {
		return errSyntax
	}
	return nil
}

// closes pops the innermost container when c closes it.
func (r *rowReader) closes(c byte) bool {
	n := len(r.stack)
	if n == 0 || (c == '}' && r.stack[n-1] != '{') || (c == ']' && r.stack[n-1] != '[') || (c != '}' && c != ']') {
		return false
	}
	r.stack = r.stack[:n-1]
	return true
}

func (r *rowReader) read() (byte, error) {
	c, err := r.br.ReadByte()
	if err != nil {
		return 0, err
	}
	r.pos++
	r.last = c
	r.val.add(c)
	return c, nil
}

// unread gives the last byte back (it is read again as the next value's
// first byte).
func (r *rowReader) unread() error {
	if err := r.br.UnreadByte(); err != nil {
		return err
	}
	r.pos--
	r.val.drop()
	return nil
}

// space skips JSON space within the line and returns the next byte. A
// newline is returned, not skipped: it ends the row.
func (r *rowReader) space() (byte, error) {
	for {
		c, err := r.read()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' {
			return c, nil
		}
	}
}

// stringBody reads a string after its opening quote, escapes checked.
func (r *rowReader) stringBody() error {
	for {
		if r.val.dst == nil && r.skipPlain() {
			continue
		}
		c, err := r.read()
		if err != nil {
			return err
		}
		switch {
		case c == '"':
			r.val.safe()
			return nil
		case c < 0x20:
			return errSyntax
		case c == '\\':
			if err := r.escape(); err != nil {
				return err
			}
		}
		r.val.safe()
	}
}

// skipPlain skips, in bulk, the buffered bytes of a string that are no
// quote, backslash or control byte (most of a row); false when there are
// none to skip.
func (r *rowReader) skipPlain() bool {
	if _, err := r.br.Peek(1); err != nil {
		return false
	}
	buf, _ := r.br.Peek(r.br.Buffered())
	n := 0
	for n < len(buf) && buf[n] != '"' && buf[n] != '\\' && buf[n] >= 0x20 {
		n++
	}
	if n == 0 {
		return false
	}
	r.last = buf[n-1]
	_, _ = r.br.Discard(n)
	r.pos += int64(n)
	return true
}

func (r *rowReader) escape() error {
	c, err := r.read()
	if err != nil {
		return err
	}
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return nil
	case 'u':
		for range 4 {
			h, err := r.read()
			if err != nil {
				return err
			}
			if !isHex(h) {
				return errSyntax
			}
		}
		return nil
	}
	return errSyntax
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// literal reads the rest of word, its first byte read.
func (r *rowReader) literal(word string) error {
	for i := 1; i < len(word); i++ {
		c, err := r.read()
		if err != nil {
			return err
		}
		if c != word[i] {
			return errSyntax
		}
	}
	return nil
}

// number reads a number whose first byte c was read, by JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *rowReader) number(c byte) error {
	var err error
	if c == '-' {
		if c, err = r.read(); err != nil {
			return err
		}
	}
	switch {
	case c == '0':
		c, err = r.peek()
	case c >= '1' && c <= '9':
		c, err = r.digits()
	default:
		return errSyntax
	}
	if err != nil {
		return err
	}
	if c == '.' {
		r.read() //nolint:errcheck // peeked
		if c, err = r.digitsOne(); err != nil {
			return err
		}
	}
	if c == 'e' || c == 'E' {
		r.read() //nolint:errcheck // peeked
		if c, err = r.peek(); err != nil {
			return err
		}
		if c == '+' || c == '-' {
			r.read() //nolint:errcheck // peeked
		}
		if _, err = r.digitsOne(); err != nil {
			return err
		}
	}
	return nil
}

// digits reads digits and returns the byte after them, unread.
func (r *rowReader) digits() (byte, error) {
	for {
		c, err := r.peek()
		if err != nil || c < '0' || c > '9' {
			return c, err
		}
		r.read() //nolint:errcheck // peeked
	}
}

// digitsOne reads at least one digit.
func (r *rowReader) digitsOne() (byte, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	if c < '0' || c > '9' {
		return 0, errSyntax
	}
	return r.digits()
}

func (r *rowReader) peek() (byte, error) {
	b, err := r.br.Peek(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// skipLine reads up to and including the next newline.
func (r *rowReader) skipLine() error {
	for {
		b, err := r.br.ReadSlice('\n')
		r.pos += int64(len(b))
		if err == nil {
			return nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// capture collects the bytes of one kept value, up to a limit: a longer
// string is cut after its last whole character (escapes included) and
// closed; a longer object or array is given up.
type capture struct {
	dst     *[]byte
	max     int
	over    bool
	safeLen int // length up to the last whole string character
}

func (v *capture) start(dst *[]byte, max int) {
	*v = capture{dst: dst, max: max, safeLen: len(*dst)}
}

func (v *capture) stop() { v.dst = nil }

func (v *capture) add(c byte) {
	if v.dst == nil {
		return
	}
	if len(*v.dst) >= v.max {
		v.over = true
		return
	}
	*v.dst = append(*v.dst, c)
}

// drop forgets the last byte added (it was given back to the reader).
func (v *capture) drop() {
	if v.dst != nil && !v.over && len(*v.dst) > 0 {
		*v.dst = (*v.dst)[:len(*v.dst)-1]
	}
}

// safe marks the end of a whole string character.
func (v *capture) safe() {
	if v.dst != nil && !v.over {
		v.safeLen = len(*v.dst)
	}
}

// value is the kept value: whole, or a string cut short; false for a
// container that did not fit.
func (v *capture) value() ([]byte, bool) {
	b := *v.dst
	switch {
	case !v.over:
		return b, true
	case len(b) > 0 && b[0] == '"':
		return append(b[:max(v.safeLen, 1):max(v.safeLen, 1)], '"'), true
	}
	return nil, false
}

// text is the captured key as a Go string (its escapes decoded); false for
// one longer than the limit.
func (v *capture) text() (string, bool) {
	if v.over {
		return "", false
	}
	b := *v.dst
	if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return string(b[1 : len(b)-1]), true
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}
