// Package yamltree parses YAML (or JSON) documents into the JSON values Envoy and Kubernetes
// decode, keeping the line and column of every value so that a problem found later (by
// protojson, a validation rule or a plugin's config check) can be reported where the user
// wrote it, not at an offset into converted JSON.
//
// Conversion rules are those of a YAML 1.2 loader feeding a JSON decoder: mappings become
// objects (keys as strings; a repeated key is an error, as in Envoy's and kubectl's strict
// loaders), sequences become arrays, anchors, aliases and merge keys (<<) are resolved,
// integers and floats become JSON numbers, null/~ becomes null, everything else a string.
package yamltree

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Node is one value of a document with its position (1-based line and column).
type Node struct {
	Line, Column int
	// Keys and Fields hold a mapping's entries in document order; KeyPos is where each key
	// was written.
	Keys   []string
	Fields map[string]*Node
	KeyPos map[string][2]int
	// Items are a sequence's elements.
	Items []*Node
	// Value is the JSON value of this node (map[string]any, []any, json.Number, string,
	// bool or nil), shared with the parent's Value.
	Value any
}

// IsMap reports whether the node is a mapping.
func (n *Node) IsMap() bool { return n != nil && n.Fields != nil }

// Doc is one document of a file.
type Doc struct {
	// Index counts documents from 0, empty ones included, in file order.
	Index int
	// Root is nil for an empty document (only comments, or nothing between two "---").
	Root *Node
	// Line is where the document starts.
	Line int
}

// JSON is the document as JSON text (null for an empty document).
func (d Doc) JSON() []byte {
	if d.Root == nil {
		return []byte("null")
	}
	b, err := json.Marshal(d.Root.Value)
	if err != nil {
		return []byte("null") // cannot happen: values come from the decoder above
	}
	return b
}

// maxNodes bounds alias expansion ("billion laughs"): a document may not expand to more
// values than this.
const maxNodes = 2_000_000

// PosError is a syntax problem at a position.
type PosError struct {
	Line, Column int
	Msg          string
}

func (e *PosError) Error() string {
	switch {
	case e.Line == 0:
		return e.Msg
	case e.Column == 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads every document of data. On a syntax error it returns the documents read so
// far and a *PosError.
func Parse(data []byte) ([]Doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Doc
	for i := 0; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			if len(docs) == 0 {
				docs = append(docs, Doc{Index: 0, Line: 1})
			}
			return docs, nil
		}
		if err != nil {
			msg := err.Error()
			pe := &PosError{Msg: strings.TrimPrefix(msg, "yaml: ")}
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				pe.Line, _ = strconv.Atoi(m[1])
				pe.Msg = m[2]
			}
			return docs, pe
		}
		c := &converter{}
		d := Doc{Index: i, Line: n.Line}
		if len(n.Content) > 0 {
			d.Line = n.Content[0].Line
			root, err := c.convert(n.Content[0], 0)
			if err != nil {
				return docs, err
			}
			if root.Value != nil || root.Fields != nil || root.Items != nil {
				d.Root = root
			}
		}
		docs = append(docs, d)
	}
}

type converter struct {
	count int
}

func (c *converter) convert(n *yaml.Node, depth int) (*Node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, &PosError{Line: n.Line, Column: n.Column, Msg: "document too large (aliases expand to more than 2000000 values)"}
	}
	if depth > 10_000 {
		return nil, &PosError{Line: n.Line, Column: n.Column, Msg: "document nested too deeply"}
	}
	out := &Node{Line: n.Line, Column: n.Column}
	switch n.Kind {
	case yaml.AliasNode:
		target, err := c.convert(n.Alias, depth+1)
		if err != nil {
			return nil, err
		}
		// The alias's own position is where the user refers to the value.
		cp := *target
		cp.Line, cp.Column = n.Line, n.Column
		return &cp, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return out, nil
		}
		return c.convert(n.Content[0], depth+1)
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		out.Items = make([]*Node, 0, len(n.Content))
		for _, e := range n.Content {
			cn, err := c.convert(e, depth+1)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, cn)
			list = append(list, cn.Value)
		}
		out.Value = list
		return out, nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.ScalarNode:
		v, err := scalar(n)
		if err != nil {
			return nil, err
		}
		out.Value = v
		return out, nil
	}
	return nil, &PosError{Line: n.Line, Column: n.Column, Msg: "unsupported YAML node"}
}

func (c *converter) mapping(n *yaml.Node, depth int) (*Node, error) {
	out := &Node{Line: n.Line, Column: n.Column, Fields: map[string]*Node{}, KeyPos: map[string][2]int{}}
	obj := map[string]any{}
	// Merge keys: explicit keys win over merged ones, earlier merged maps over later ones.
	var merged []*Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			srcs := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				srcs = v.Content
			}
			for _, s := range srcs {
				m, err := c.convert(s, depth+1)
				if err != nil {
					return nil, err
				}
				if !m.IsMap() {
					return nil, &PosError{Line: s.Line, Column: s.Column, Msg: "a merge key (<<) needs a mapping"}
				}
				merged = append(merged, m)
			}
			continue
		}
		key, err := keyString(k)
		if err != nil {
			return nil, err
		}
		if _, dup := out.Fields[key]; dup {
			first := out.KeyPos[key]
			return nil, &PosError{Line: k.Line, Column: k.Column, Msg: fmt.Sprintf("key %q already set at line %d, column %d", key, first[0], first[1])}
		}
		cv, err := c.convert(v, depth+1)
		if err != nil {
			return nil, err
		}
		out.Keys = append(out.Keys, key)
		out.Fields[key] = cv
		out.KeyPos[key] = [2]int{k.Line, k.Column}
		obj[key] = cv.Value
	}
	for _, m := range merged {
		for _, key := range m.Keys {
			if _, ok := out.Fields[key]; ok {
				continue
			}
			out.Keys = append(out.Keys, key)
			out.Fields[key] = m.Fields[key]
			out.KeyPos[key] = m.KeyPos[key]
			obj[key] = m.Fields[key].Value
		}
	}
	out.Value = obj
	return out, nil
}

func keyString(k *yaml.Node) (string, error) {
	switch k.Kind {
	case yaml.ScalarNode:
		if k.ShortTag() == "!!null" {
			return "null", nil
		}
		return k.Value, nil
	case yaml.AliasNode:
		if k.Alias != nil && k.Alias.Kind == yaml.ScalarNode {
			return k.Alias.Value, nil
		}
	}
	return "", &PosError{Line: k.Line, Column: k.Column, Msg: "mapping keys must be scalars"}
}

func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &PosError{Line: n.Line, Column: n.Column, Msg: err.Error()}
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return json.Number(strconv.FormatUint(u, 10)), nil
		}
		// Too large for 64 bits: keep the digits, the proto decoder reports the range.
		return json.Number(strings.ReplaceAll(n.Value, "_", "")), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, &PosError{Line: n.Line, Column: n.Column, Msg: err.Error()}
		}
		switch {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "Infinity", nil
		case math.IsInf(f, -1):
			return "-Infinity", nil
		}
		if isJSONNumber(n.Value) {
			return json.Number(n.Value), nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	}
	return n.Value, nil
}

var jsonNumberRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func isJSONNumber(s string) bool { return jsonNumberRE.MatchString(s) }

// Lookup returns the node at p, or the deepest node on the way there when p goes further
// than the document (a missing required field is reported where its parent is). exact tells
// which.
func (n *Node) Lookup(p ypath.Path) (node *Node, exact bool) {
	cur := n
	segs := p.Segments()
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if cur == nil {
			return nil, false
		}
		switch {
		case s.IsIdx:
			if s.Index < 0 || s.Index >= len(cur.Items) {
				return cur, false
			}
			cur = cur.Items[s.Index]
		case cur.IsMap():
			next, ok := cur.Fields[s.Name]
			if !ok && !s.Quoted {
				// Proto paths use field names; JSON-style YAML (istiod's output) uses
				// lowerCamelCase JSON names.
				next, ok = cur.Fields[jsonName(s.Name)]
			}
			if !ok {
				// Plugin field paths join names with dots; a map key may itself contain dots
				// (header names, filter names): try joining the following names.
				name := s.Name
				for j := i + 1; j < len(segs) && !segs[j].IsIdx && !ok; j++ {
					name += "." + segs[j].Name
					if next, ok = cur.Fields[name]; ok {
						i = j
					}
				}
				if !ok {
					return cur, false
				}
			}
			cur = next
		default:
			return cur, false
		}
	}
	return cur, true
}

// jsonName is protobuf's JSON name of a field name: "typed_config" -> "typedConfig".
func jsonName(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_':
			up = true
		case up && r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}

// KeyPosition is where the key of the last step of p was written, when that step is a
// mapping key present in the document ("unknown field" problems point at the key).
func (n *Node) KeyPosition(p ypath.Path) (line, col int, ok bool) {
	segs := p.Segments()
	if len(segs) == 0 || segs[len(segs)-1].IsIdx {
		return 0, 0, false
	}
	parentPath := ypath.Path{}
	for _, s := range segs[:len(segs)-1] {
		parentPath = parentPath.Append(s)
	}
	parent, exact := n.Lookup(parentPath)
	if !exact || !parent.IsMap() {
		return 0, 0, false
	}
	last := segs[len(segs)-1]
	pos, found := parent.KeyPos[last.Name]
	if !found && !last.Quoted {
		pos, found = parent.KeyPos[jsonName(last.Name)]
	}
	if !found {
		return 0, 0, false
	}
	return pos[0], pos[1], true
}
