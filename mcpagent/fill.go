package mcpagent

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
)

// members returns the names of the members of the JSON object b in
// order, duplicates included, and whether b is exactly one JSON object
// (surrounded by white space at most).
func members(b []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, ok := t.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		names = append(names, name)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return names, true
}

// fill returns the JSON object args with the members of values whose
// names it lacks added in front, in the order of names; args itself is
// otherwise unchanged, byte for byte (the daemon's strict decoding sees
// what the agent sent: a duplicate or an unknown member is still
// refused). Empty or null args are {}. args that are not one JSON object
// are returned unchanged, for the daemon to refuse. value is called only
// for the names args lacks; an error from it is returned.
func fill(args []byte, names []string, value func(name string) (any, error)) ([]byte, error) {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = []byte("{}")
	}
	have, ok := members(args)
	if !ok {
		return args, nil
	}
	var add bytes.Buffer
	for _, n := range names {
		if slices.Contains(have, n) {
			continue
		}
		v, err := value(n)
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(n)
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if add.Len() > 0 {
			add.WriteByte(',')
		}
		add.Write(k)
		add.WriteByte(':')
		add.Write(b)
	}
	if add.Len() == 0 {
		return args, nil
	}
	i := bytes.IndexByte(args, '{') // members says the first non-space byte is it
	out := make([]byte, 0, len(args)+add.Len()+1)
	out = append(out, args[:i+1]...)
	out = append(out, add.Bytes()...)
	if len(have) > 0 {
		out = append(out, ',')
	}
	return append(out, args[i+1:]...), nil
}
