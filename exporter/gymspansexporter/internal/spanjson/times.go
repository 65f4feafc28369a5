// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package spanjson // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter/internal/spanjson"

// The text of times in both line formats: ISO 8601 with microseconds for
// console lines, decimal nanoseconds for both, and the per-batch cache that
// keeps a minute's and a second's text.

import (
	"math"
	"strconv"
)

// appendISOTime writes ns since the epoch as "2006-01-02T15:04:05.000000Z"
// (microseconds, truncated), quoted.
func appendISOTime(b []byte, ns uint64) []byte {
	ns = min(ns, math.MaxInt64)
	return appendISOSeconds(appendISOMinute(b, int64(ns/1e9)/60), ns)
}

// appendISOMinute writes the minute since the epoch m as `"2006-01-02T15:04:`.
func appendISOMinute(b []byte, m int64) []byte {
	y, mo, d := civilFromDays(m / (24 * 60))
	b = append(b, '"')
	b = append4(b, y)
	b = append(b, '-')
	b = append2(b, mo)
	b = append(b, '-')
	b = append2(b, d)
	b = append(b, 'T')
	b = append2(b, int(m%(24*60)/60))
	b = append(b, ':')
	b = append2(b, int(m%60))
	return append(b, ':')
}

// appendISOSeconds ends appendISOMinute's text for ns: `05.000000Z"`.
func appendISOSeconds(b []byte, ns uint64) []byte {
	b = append2(b, int(ns/1e9%60))
	b = append(b, '.')
	us := int(ns % 1e9 / 1e3)
	b = append2(b, us/10000)
	b = append2(b, us/100%100)
	b = append2(b, us%100)
	return append(b, 'Z', '"')
}

// TimeCache keeps the text of the last minute written by appendISOTime and
// of the last second written by appendUnixNano: the times of a batch mostly
// fall within a few minutes, a span's start and end often within a second,
// and the date and the leading digits are the costly part. A nil cache
// writes every time in full.
type TimeCache struct {
	minute  int64 // of text; meaningful once text is set
	text    []byte
	second  uint64 // of secText; meaningful once secText is set
	secText []byte
}

// appendUnixNano writes ns as a decimal integer.
func (c *TimeCache) appendUnixNano(b []byte, ns uint64) []byte {
	if c == nil || ns < 1e9 {
		return strconv.AppendUint(b, ns, 10)
	}
	if s := ns / 1e9; s != c.second || len(c.secText) == 0 {
		c.second, c.secText = s, strconv.AppendUint(c.secText[:0], s, 10)
	}
	b = append(b, c.secText...)
	n := int(ns % 1e9)
	b = append(b, byte('0'+n/1e8))
	n %= 1e8
	b = append2(b, n/1e6)
	b = append2(b, n/1e4%100)
	b = append2(b, n/100%100)
	return append2(b, n%100)
}

// appendISOTime is appendISOTime with the minute's text cached.
func (c *TimeCache) appendISOTime(b []byte, ns uint64) []byte {
	if c == nil {
		return appendISOTime(b, ns)
	}
	ns = min(ns, math.MaxInt64)
	if m := int64(ns/1e9) / 60; m != c.minute || len(c.text) == 0 {
		c.minute, c.text = m, appendISOMinute(c.text[:0], m)
	}
	return appendISOSeconds(append(b, c.text...), ns)
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (Howard Hinnant's days_from_civil, inverted).
func civilFromDays(z int64) (year, month, day int) {
	z += 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

func append2(b []byte, v int) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

func append4(b []byte, v int) []byte {
	if v > 9999 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// AppendConsoleTime writes a span's start or end: null when unset.
func (c *TimeCache) AppendConsoleTime(b []byte, ns uint64) []byte {
	if ns == 0 {
		return append(b, "null"...)
	}
	return c.appendISOTime(b, ns)
}

// appendOTLPTime writes a time as OTLP/JSON's quoted decimal nanoseconds.
func (c *TimeCache) appendOTLPTime(b []byte, ns uint64) []byte {
	b = append(b, '"')
	b = c.appendUnixNano(b, ns)
	return append(b, '"')
}
