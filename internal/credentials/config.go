// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package credentials // import "github.com/otelcol-gym/otelcol-gym/internal/credentials"

import (
	"errors"
	"fmt"
)

// Config is the rule's lists as a component configures them (its
// `credentials` key): unset, a list is its default; an empty list is no
// key (keys: [] and suffixes: [] turn the rule off).
type Config struct {
	// Keys are attribute keys removed whole, compared without ASCII case.
	// Default: DefaultKeys.
	Keys []string `mapstructure:"keys"`
	// Suffixes remove every key that ends in one of them, compared without
	// ASCII case. Default: DefaultSuffixes.
	Suffixes []string `mapstructure:"suffixes"`

	_ struct{}
}

// NewDefaultConfig is the configuration of the default rule.
func NewDefaultConfig() Config {
	return Config{
		Keys:     append([]string(nil), DefaultKeys...),
		Suffixes: append([]string(nil), DefaultSuffixes...),
	}
}

// Validate refuses an empty key or suffix: an empty suffix would remove
// every attribute.
func (c Config) Validate() error {
	var errs []error
	for i, k := range c.Keys {
		if k == "" {
			errs = append(errs, fmt.Errorf("keys[%d] is empty: remove it (keys: [] turns the key list off)", i))
		}
	}
	for i, s := range c.Suffixes {
		if s == "" {
			errs = append(errs, fmt.Errorf("suffixes[%d] is empty, which would remove every attribute: remove it (suffixes: [] turns the suffix list off)", i))
		}
	}
	return errors.Join(errs...)
}

// Rule is the configured rule.
func (c Config) Rule() *Rule { return NewRule(c.Keys, c.Suffixes) }
