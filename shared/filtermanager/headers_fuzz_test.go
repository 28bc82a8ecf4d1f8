package filtermanager_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// FuzzHeaderMapFollowsAModel runs a sequence of header operations, half in a
// BeforeRoute plugin and half after it (so the first half's writes reach
// Envoy and are applied to moe's copy in between), and checks every read
// against a plain model of the map, and Envoy's headers at the end.
func FuzzHeaderMapFollowsAModel(f *testing.F) {
	f.Add([]byte{2, 0, 1, 5, 3, 1, 2, 4, 2, 0, 1, 0, 5, 1, 1})
	f.Add([]byte{4, 1, 0, 5, 3, 0, 3, 3, 1, 1, 2, 1, 0, 1, 5})
	f.Add([]byte{1, 1, 1, 3, 1, 2, 5, 0, 0, 2, 1, 3, 4, 1, 0, 1, 1, 2, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 300 {
			ops = ops[:300]
		}
		keys := []string{"x-a", "x-b", "x-c", "x-d"}
		model := map[string][]string{"x-a": {"1"}, "x-b": {"1", "2"}}
		var errs []string
		check := func(cond bool, format string, args ...any) {
			if !cond && len(errs) < 5 {
				errs = append(errs, fmt.Sprintf(format, args...))
			}
		}
		// run applies ops[i] for i in [from, to), three bytes each: op, key, value.
		run := func(h api.HeaderMap, from, to int) {
			for i := from; i+2 < to; i += 3 {
				k, v := keys[int(ops[i+1])%len(keys)], fmt.Sprint(ops[i+2]%4)
				switch ops[i] % 6 {
				case 0:
					got, ok := h.Get(k)
					want := model[k]
					check(ok == (len(want) > 0) && (!ok || got == want[0]), "op %d: Get(%s) = %q %v, model %q", i, k, got, ok, want)
				case 1:
					check(slices.Equal(h.Values(k), model[k]), "op %d: Values(%s) = %q, model %q", i, k, h.Values(k), model[k])
				case 2:
					_ = h.Set(k, v)
					model[k] = []string{v}
				case 3:
					_ = h.Add(k, v)
					model[k] = append(slices.Clone(model[k]), v)
				case 4:
					_ = h.Del(k)
					delete(model, k)
				case 5:
					var got []string
					h.Range(func(k, v string) bool {
						if strings.HasPrefix(k, "x-") {
							got = append(got, k+"="+v)
						}
						return true
					})
					var want []string
					for k, vs := range model {
						for _, v := range vs {
							want = append(want, k+"="+v)
						}
					}
					slices.Sort(got)
					slices.Sort(want)
					check(slices.Equal(got, want), "op %d: Range %q, model %q", i, got, want)
					check(h.Len() == 4+len(model), "op %d: Len %d, model %d keys and 4 pseudo-headers", i, h.Len(), len(model))
				}
			}
		}
		half := len(ops) / 2 / 3 * 3
		before := plugin(t, api.Needs{Phase: api.BeforeRoute}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			run(h, 0, half)
			return api.Continue
		}})
		after := plugin(t, api.Needs{}, recvF{func(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			run(h, half, len(ops))
			return api.Continue
		}})
		res := do(t, mustChain(t, before, after), fakeenvoy.Request{Headers: [][2]string{{"x-a", "1"}, {"x-b", "1"}, {"x-b", "2"}}})
		up := map[string][]string{}
		for k, vs := range res.Upstream.Headers {
			if strings.HasPrefix(k, "x-") {
				up[k] = vs
			}
		}
		for k := range up {
			check(slices.Equal(up[k], model[k]), "upstream %s = %q, model %q", k, up[k], model[k])
		}
		for k := range model {
			check(slices.Equal(up[k], model[k]), "upstream %s = %q, model %q", k, up[k], model[k])
		}
		for _, e := range errs {
			t.Error(e)
		}
	})
}
