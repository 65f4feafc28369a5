// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package evidence // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
)

// Config is what the finder reads: the gym processor's rollout_attribute,
// url_attributes, url_prefix, rollout_id_pattern and model_routes.
type Config struct {
	Attribute     string
	URLAttributes []string
	URLPrefix     string
	Pattern       string
	ModelRoutes   []string
}

// Finder finds a span's direct rollout evidence (design §4.1).
type Finder struct {
	attr     string
	urlAttrs []string
	marker   string // "/<url_prefix>/"
	// modelRoutes: the paths of a model server's calls (model_routes).
	modelRoutes []string
	re          *regexp.Regexp // nil when the default pattern is matched by hand
}

// New returns the finder of cfg; the pattern must compile (CompilePattern).
func New(cfg Config) (*Finder, error) {
	f := &Finder{
		attr:        cfg.Attribute,
		urlAttrs:    cfg.URLAttributes,
		marker:      "/" + cfg.URLPrefix + "/",
		modelRoutes: cfg.ModelRoutes,
	}
	if cfg.Pattern != gymconv.RolloutIDPattern {
		re, err := CompilePattern(cfg.Pattern)
		if err != nil {
			return nil, err
		}
		f.re = re
	}
	return f, nil
}

// CompilePattern anchors the rollout-id pattern so that it must match a
// whole path segment.
func CompilePattern(p string) (*regexp.Regexp, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("must not be empty")
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %w", p, err)
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("%q matches the empty string", p)
	}
	return re, nil
}

// Find returns the rollout id the span with attributes attrs names
// directly, or "", and whether it is the span's rollout attribute (which
// then needs no rewrite). The returned string never aliases a larger
// attribute value.
func (f *Finder) Find(attrs pcommon.Map) (rollout string, inAttribute bool) {
	if v, ok := attrs.Get(f.attr); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		return v.Str(), true
	}
	for _, k := range f.urlAttrs {
		v, ok := attrs.Get(k)
		if !ok {
			continue
		}
		if v.Type() != pcommon.ValueTypeStr {
			return "", false
		}
		return f.FromURL(v.Str()), false
	}
	return "", false
}

// FromURL returns R from the first "/<prefix>/R/" in u whose R matches the
// pattern, or "". R must be followed by a "/".
func (f *Finder) FromURL(u string) string {
	for {
		i := strings.Index(u, f.marker)
		if i < 0 {
			return ""
		}
		rest := u[i+len(f.marker):]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return ""
		}
		if seg := rest[:j]; f.matches(seg) {
			return strings.Clone(seg)
		}
		u = rest
	}
}

func (f *Finder) matches(seg string) bool {
	if f.re != nil {
		return f.re.MatchString(seg)
	}
	return gymconv.ValidRolloutID(seg)
}
