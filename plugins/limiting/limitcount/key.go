package limitcount

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// keyTemplate is the limit key, compiled once per config. It renders like
// variables.Template (which validates the syntax and names first) but also
// reports whether a variable had no value, so that empty_key: reject works
// for composite keys ("$route_name:$header_x-user" without the header), and
// it renders $remote_addr as the client IP without the port.
type keyTemplate struct {
	parts []keyPart
	size  int
}

type keyPart struct {
	lit      string
	v        variables.Var
	isVar    bool
	clientIP bool // $remote_addr
}

// compileKey splits src into literals and variables with the syntax of
// shared/variables: "$name" (letters, digits, '_', '-', '.'; a trailing '.'
// is punctuation), "${name}", "$$" for '$'. The caller has already compiled
// src with variables.CompileTemplate, so every name here is known.
func compileKey(src string) (*keyTemplate, error) {
	k := &keyTemplate{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			k.parts = append(k.parts, keyPart{lit: lit.String()})
			k.size += lit.Len()
			lit.Reset()
		}
	}
	for i := 0; i < len(src); {
		if src[i] != '$' {
			lit.WriteByte(src[i])
			i++
			continue
		}
		if i+1 < len(src) && src[i+1] == '$' {
			lit.WriteByte('$')
			i += 2
			continue
		}
		var name string
		if i+1 < len(src) && src[i+1] == '{' {
			end := strings.IndexByte(src[i+2:], '}')
			if end < 0 {
				end = len(src) - i - 2
			}
			name = src[i+2 : i+2+end]
			i += 3 + end
		} else {
			j := i + 1
			for j < len(src) && isNameChar(src[j]) {
				j++
			}
			name = src[i+1 : j]
			i = j
		}
		trail := ""
		for strings.HasSuffix(name, ".") {
			trail += "."
			name = name[:len(name)-1]
		}
		v, err := variables.Compile(name)
		if err != nil {
			return nil, err
		}
		flush()
		k.parts = append(k.parts, keyPart{v: v, isVar: true, clientIP: v.Name() == "remote_addr"})
		lit.WriteString(trail)
	}
	flush()
	return k, nil
}

func isNameChar(c byte) bool {
	return c == '_' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// render returns the key and whether every variable had a value. A key of
// one variable costs no allocation.
func (k *keyTemplate) render(ctx api.Context) (string, bool) {
	if len(k.parts) == 1 {
		return k.parts[0].get(ctx)
	}
	buf := make([]byte, 0, k.size+48)
	complete := true
	for i := range k.parts {
		s, ok := k.parts[i].get(ctx)
		complete = complete && ok
		buf = append(buf, s...)
	}
	return string(buf), complete
}

func (p *keyPart) get(ctx api.Context) (string, bool) {
	if !p.isVar {
		return p.lit, true
	}
	s, ok := p.v.Get(ctx)
	if p.clientIP {
		s = hostOnly(s)
	}
	return s, ok && s != ""
}

// maxRawKey: longer rendered keys (a huge header value) are stored by hash,
// so a client cannot make Redis keep large keys.
const maxRawKey = 200

// redisKey is "<prefix>{<key>}:<f|s><window ms>". The braces make the key its
// own Redis Cluster hash tag; the suffix separates fixed from sliding counters
// (different Redis types) and windows of different lengths.
func (c *Config) redisKey(key string) string {
	if len(key) > maxRawKey {
		sum := sha256.Sum256([]byte(key))
		key = "sha256:" + hex.EncodeToString(sum[:16])
	}
	return c.KeyPrefix + "{" + key + c.keySuffix
}

// hostOnly drops the port of Envoy's downstream address ("192.0.2.1:5555",
// "[2001:db8::1]:5555"): the framework's $remote_addr carries the port, so
// every connection would get its own counter, while users expect nginx's
// $remote_addr (the client IP). Slicing, no allocation.
func hostOnly(a string) string {
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i > 0 {
			return a[1:i]
		}
		return a
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 && strings.IndexByte(a, ':') == i {
		return a[:i]
	}
	return a
}
