package server

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
)

// PrintSettings writes every setting as --help shows it: the flag, its
// meaning, its default and its environment variable.
func PrintSettings(w io.Writer) {
	def := reflect.ValueOf(DefaultConfig())
	t := def.Type()
	fmt.Fprintf(w, "  --config FILE\n\tYAML config file (env XZ_HUB_CONFIG)\n")
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := f.Tag.Get("yaml")
		fmt.Fprintf(w, "  --%s %s\n\t%s\n\t", key, placeholder(f.Type), f.Tag.Get("help"))
		if d := defaultText(def.Field(i)); d != "" {
			fmt.Fprintf(w, "default: %s; ", d)
		}
		fmt.Fprintf(w, "env %s\n", envName(key))
	}
}

func placeholder(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "DURATION"
	case reflect.TypeFor[int]():
		return "N"
	case reflect.TypeFor[[]string]():
		return "LIST"
	}
	return "VALUE"
}

func defaultText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		if x == 0 {
			return ""
		}
		return x.String()
	case int:
		return fmt.Sprint(x)
	case []string:
		return strings.Join(x, ",")
	case string:
		return x
	}
	return ""
}
