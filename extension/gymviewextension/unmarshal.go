// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// Unmarshal decodes the configuration and refuses keys it does not know.
// confighttp.ServerConfig, squashed into Config, decodes its part ignoring
// every other key (it must leave its parent's keys alone), and in doing so
// made the whole section accept anything: a misspelled `jaeger_ulr` or a
// key meant for another component was silently dropped.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	type plain Config // without this method: no recursion
	if err := conf.Unmarshal((*plain)(c)); err != nil {
		return err
	}
	known := configKeys()
	var unknown []string
	for k := range conf.ToStringMap() {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("has invalid keys: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// configKeys lists Config's keys: its own and the HTTP server's, read from
// its fields' tags (a key listed by hand was forgotten once).
func configKeys() []string {
	return mapstructureKeys(reflect.TypeFor[Config]())
}

// mapstructureKeys lists the keys a struct decodes, those of squashed
// fields included.
func mapstructureKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && strings.Contains(opts, "squash") && f.Type.Kind() == reflect.Struct:
			keys = append(keys, mapstructureKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		default:
			keys = append(keys, strings.ToLower(f.Name))
		}
	}
	return keys
}
