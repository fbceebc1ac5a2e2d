package rie

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// ParametersKey is the entry of an env-vars file that applies to every
// function.
const ParametersKey = "Parameters"

// ReadEnvVars reads the JSON file `sam local invoke --env-vars` takes, for
// the function with logical id function: an object of objects, where
// "Parameters" sets variables for every function and the function's own
// entry overrides them. Values become strings as SAM makes them: a string
// as it is, true and false as "true" and "false", a number as written,
// null, a list or an object as "". Any other shape is an error.
//
// SAM then sets only the variables the template declares for the
// function; a caller without a template, such as make invoke, sets them
// all.
func ReadEnvVars(r io.Reader, function string) (map[string]string, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var file map[string]json.RawMessage
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("rie: env-vars: not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("rie: env-vars: more than one JSON value")
	}
	entries := map[string]map[string]any{}
	names := make([]string, 0, len(file))
	for name := range file {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var vars map[string]any
		d := json.NewDecoder(bytes.NewReader(file[name]))
		d.UseNumber()
		if err := d.Decode(&vars); err != nil || vars == nil {
			return nil, fmt.Errorf("rie: env-vars: %q is not an object of variables", name)
		}
		entries[name] = vars
	}
	out := map[string]string{}
	for _, name := range []string{ParametersKey, function} {
		for k, v := range entries[name] {
			out[k] = envString(v)
		}
	}
	return out, nil
}

// envString turns a JSON value into an environment variable's value.
func envString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	default: // null, lists and objects: unresolved intrinsics, to SAM
		return ""
	}
}
