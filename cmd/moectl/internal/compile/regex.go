package compile

import (
	"fmt"
	"regexp/syntax"
	"strings"
)

// regexProblem says why pattern cannot be used, or "" when it can. Envoy compiles safe_regex
// with RE2 (Go's regexp/syntax accepts the same language); moe-host uses C++ std::regex in
// ECMAScript mode, so RE2 constructs that ECMAScript lacks or reads differently are refused
// rather than silently matching something else.
func regexProblem(pattern string) string {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return fmt.Sprintf("invalid RE2 regex: %v", err)
	}
	if what := re2Only(pattern); what != "" {
		return fmt.Sprintf("%s is RE2 syntax that moe-host's ECMAScript regex engine does not support", what)
	}
	return ""
}

// re2Only scans a valid RE2 pattern for constructs outside ECMAScript: inline flags and named
// groups, \A \z \C \Q..\E, \p{..}/\P{..} Unicode classes, \x{..} escapes, and the POSIX
// classes [[:word:]] and [[:^name:]] that std::regex does not know.
func re2Only(p string) string {
	inClass := false
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case ch == '\\' && i+1 < len(p):
			switch n := p[i+1]; n {
			case 'A', 'z', 'C', 'Q', 'E', 'p', 'P':
				return `\` + string(n)
			case 'x':
				if i+2 < len(p) && p[i+2] == '{' {
					return `\x{...}`
				}
			}
			i++ // the escaped character is literal
		case inClass && strings.HasPrefix(p[i:], "[:"):
			end := strings.Index(p[i+2:], ":]")
			if end < 0 {
				continue
			}
			name := p[i+2 : i+2+end]
			if strings.HasPrefix(name, "^") || name == "word" {
				return "[[:" + name + ":]]"
			}
			i += 2 + end + 1
		case inClass && ch == ']':
			inClass = false
		case !inClass && ch == '[':
			inClass = true
			// A ']' first in the class (after an optional '^') is a literal.
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case !inClass && ch == '(' && strings.HasPrefix(p[i+1:], "?"):
			rest := p[i+2:]
			switch {
			case strings.HasPrefix(rest, ":"):
				// (?:...) is ECMAScript too.
			case strings.HasPrefix(rest, "P<"), strings.HasPrefix(rest, "<"):
				return "named group (?P<name>...)"
			default:
				return "inline flag group (?flags)"
			}
		}
	}
	return ""
}
