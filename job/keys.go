package job

import (
	"reflect"
	"strings"
)

// ModelKeys lists the TOML keys of a Model in field order, for messages that say
// which keys a [model] table accepts.
func ModelKeys() []string {
	t := reflect.TypeFor[Model]()
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		keys = append(keys, tag)
	}
	return keys
}
