// Package fields reads decoded JSON and YAML objects (map[string]any, as Application and
// ApplicationSet specs arrive) without panicking on a missing or mistyped field: each accessor
// returns the zero value instead, as a missing field means in Argo CD's own structs.
package fields

// Map is m[key] as an object; nil when absent or not an object.
func Map(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

// List is v as a list; nil when it is not one.
func List(v any) []any {
	l, _ := v.([]any)
	return l
}

// String is v as a string; "" when it is not one.
func String(v any) string {
	s, _ := v.(string)
	return s
}

// Strings are the strings of the list v, others left out.
func Strings(v any) []string {
	var out []string
	for _, x := range List(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
