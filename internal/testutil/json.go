package testutil

import (
	"encoding/json"
	"testing"
)

// JSONObject marshals v and decodes the result as a JSON object, for tests of the
// field names a user scripts against; it returns the object and the JSON text.
func JSONObject(tb testing.TB, v any) (map[string]any, []byte) {
	tb.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		tb.Fatal(err)
	}
	return m, data
}
