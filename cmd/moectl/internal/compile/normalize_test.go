package compile

import "testing"

func TestRequestTargetNormalisationIsCompiled(t *testing.T) {
	cases := []struct {
		name, hcm                 string
		normalize, merge, dot     bool
		escapedSlashes, stripPort string
	}{
		{name: "Envoy's defaults", escapedSlashes: "KEEP_UNCHANGED", stripPort: "NONE"},
		{name: "implementation default is keep", hcm: "path_with_escaped_slashes_action: IMPLEMENTATION_SPECIFIC_DEFAULT",
			escapedSlashes: "KEEP_UNCHANGED", stripPort: "NONE"},
		{name: "all on", hcm: "normalize_path: true\nmerge_slashes: true\npath_with_escaped_slashes_action: UNESCAPE_AND_REDIRECT\nstrip_any_host_port: true\nstrip_trailing_host_dot: true",
			normalize: true, merge: true, dot: true, escapedSlashes: "UNESCAPE_AND_REDIRECT", stripPort: "ANY"},
		{name: "matching port", hcm: "strip_matching_host_port: true\npath_with_escaped_slashes_action: REJECT_REQUEST",
			escapedSlashes: "REJECT_REQUEST", stripPort: "MATCHING_HOST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := compileString(t, minimal(t, map[string]string{"HCM": tc.hcm}))
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			h := res.Bootstrap.Listeners[0].HCM
			if h.NormalizePath != tc.normalize || h.MergeSlashes != tc.merge || h.StripTrailingHostDot != tc.dot ||
				h.PathWithEscapedSlashesAction != tc.escapedSlashes || h.StripPort != tc.stripPort {
				t.Errorf("got normalize %v merge %v dot %v escaped %s strip %s", h.NormalizePath, h.MergeSlashes,
					h.StripTrailingHostDot, h.PathWithEscapedSlashesAction, h.StripPort)
			}
		})
	}
}
