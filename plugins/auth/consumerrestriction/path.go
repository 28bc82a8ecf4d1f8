package consumerrestriction

import (
	"errors"
	"net/url"
	"path"
	"strings"
)

var errBadPath = errors.New("malformed percent-encoding in path")

// matchPath returns the request path as rules see it: without query and
// fragment, percent-decoded once, repeated slashes merged and dot segments
// resolved (a trailing slash is kept). This is what an upstream will most
// likely resolve, so "/a/../admin" or "/%61dmin" cannot get around a rule on
// "/admin". The common, already clean path is returned without allocating.
func matchPathOf(raw string) (string, error) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if strings.IndexByte(raw, '%') >= 0 {
		p, err := url.PathUnescape(raw)
		if err != nil {
			return "", errBadPath
		}
		raw = p
	}
	if strings.IndexByte(raw, ';') >= 0 {
		raw = dropSegmentParams(raw)
	}
	return normalizePathOrSame(raw), nil
}

// dropSegmentParams removes ";..." up to the end of each path segment.
func dropSegmentParams(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for len(p) > 0 {
		i := strings.IndexByte(p, ';')
		if i < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		p = p[i:]
		if j := strings.IndexByte(p, '/'); j >= 0 {
			p = p[j:]
		} else {
			p = ""
		}
	}
	return b.String()
}

// normalizePathOrSame merges slashes and resolves dot segments; it returns p
// itself when there is nothing to do.
func normalizePathOrSame(p string) string {
	if !needsClean(p) {
		return p
	}
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

func needsClean(p string) bool {
	if p == "" || p[0] != '/' {
		return true
	}
	return strings.Contains(p, "//") || strings.Contains(p, "/./") || strings.Contains(p, "/../") ||
		strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
}
