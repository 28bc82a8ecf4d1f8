package ldcroute

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestSlots(t *testing.T) {
	c, _ := parse(t, `{`+threeUnits+`}`)
	for _, tc := range []struct {
		uid  string
		slot int
		ok   bool
	}{
		{"0", 0, true}, {"29", 29, true}, {"30", 30, true}, {"1234", 34, true}, {"2088000000000099", 99, true},
		// Longer than any integer type: still its last two digits.
		{"123456789012345678901234567890123456789012345678901234567", 67, true},
		{"007", 7, true},
		{"-5", 0, false}, {"12a", 0, false}, {"1 2", 0, false}, {"١٢", 0, false},
		{strings.Repeat("1", 65), 0, false}, // over max_uid_length
	} {
		slot, ok := c.slotOf(tc.uid)
		if ok != tc.ok || (ok && slot != tc.slot) {
			t.Errorf("slotOf(%.20q) = %d %v, want %d %v", tc.uid, slot, ok, tc.slot, tc.ok)
		}
	}
	h, _ := parse(t, `{"slot_by":"hash","slots":1000,"uid":["$header_x-uid"],"default_unit":"A","units":[{"name":"A","cluster":"a","slots":["0-499"]},{"name":"B","cluster":"b","slots":["500-999"]}]}`)
	n := map[int]int{}
	for i := 0; i < 10000; i++ {
		s, ok := h.slotOf("user-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260%10)) + string(rune('0'+i/2600)))
		if !ok || s < 0 || s >= 1000 {
			t.Fatalf("hash slot %d %v", s, ok)
		}
		n[s/500]++
	}
	if n[0] < 4500 || n[0] > 5500 {
		t.Errorf("hash spread %v", n)
	}
	if s, _ := h.slotOf("alice"); s != 289 {
		// Pinned: a changed hash would move every user of a fleet.
		t.Errorf("hash slot of alice = %d, want 741", s)
	}
}

func TestRouting(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		headers      []string
		unit         string
		cluster      string
		counter      string
	}{
		{"slot 7 -> RZ01", `{` + threeUnits + `}`, []string{"x-uid", "1007"}, "RZ01", "rz01", "routed_RZ01"},
		{"slot 34 -> RZ02", `{` + threeUnits + `}`, []string{"x-uid", "1234"}, "RZ02", "rz02", "routed_RZ02"},
		{"slot 99 -> RZ03", `{` + threeUnits + `}`, []string{"x-uid", "99"}, "RZ03", "rz03", "routed_RZ03"},
		{"uid from the cookie", `{` + threeUnits + `}`, []string{"cookie", "a=b; uid=45"}, "RZ02", "rz02", "routed_RZ02"},
		{"no uid -> default unit", `{` + threeUnits + `}`, nil, "RZ01", "rz01", "no_uid"},
		{"malformed cookie: no uid -> default", `{` + threeUnits + `}`, []string{"cookie", ";;uid;=45"}, "RZ01", "rz01", "no_uid"},
		{"repeated uid header: the first counts", `{` + threeUnits + `}`, []string{"x-uid", "99", "x-uid", "1"}, "RZ03", "rz03", "routed_RZ03"},
		{"invalid uid -> default unit", `{` + threeUnits + `}`, []string{"x-uid", "abc"}, "RZ01", "rz01", "invalid_uid"},
		{"huge uid -> invalid -> default unit", `{` + threeUnits + `}`, []string{"x-uid", strings.Repeat("9", 60000)}, "RZ01", "rz01", "invalid_uid"},
		{"home down -> first fallback", `{` + strings.Replace(threeUnits, `"slots": ["30-59"]`, `"slots": ["30-59"], "down": true`, 1) + `}`,
			[]string{"x-uid", "1234"}, "RZ03", "rz03", "fallback"},
		{"home and first fallback down -> second", `{` + strings.NewReplacer(`"slots": ["30-59"]`, `"slots": ["30-59"], "down": true`, `"slots": ["60-99"]`, `"slots": ["60-99"], "down": true`).Replace(threeUnits) + `}`,
			[]string{"x-uid", "1234"}, "RZ01", "rz01", "fallback"},
		{"default unit down -> its fallback", `{` + strings.Replace(threeUnits, `"slots": ["0-29"]`, `"slots": ["0-29"], "down": true`, 1) + `}`,
			nil, "RZ02", "rz02", "fallback"},
		{"all down, all_down home", `{"all_down":"home",` + strings.ReplaceAll(threeUnits, `"fallback"`, `"down": true, "fallback"`) + `}`,
			[]string{"x-uid", "1234"}, "RZ02", "rz02", "all_down_home"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			ctx, req, st := run(t, c, tc.headers...)
			if st != api.Continue || unitOf(ctx) != tc.unit {
				t.Fatalf("status %v unit %q, want %q (reply %+v)", st, unitOf(ctx), tc.unit, ctx.Replied)
			}
			if v, _ := req.Get("x-moe-cluster"); v != tc.cluster {
				t.Fatalf("x-moe-cluster %q", v)
			}
			if v, _ := req.Get("x-ldc-unit"); v != tc.unit || ctx.RouteCleared != 1 {
				t.Fatalf("x-ldc-unit %q, route cleared %d", v, ctx.RouteCleared)
			}
			if env.Count(tc.counter) != 1 || env.Count("routed_"+tc.unit) != 1 {
				t.Fatalf("counters %v", env.Values())
			}
		})
	}
}

func TestRejections(t *testing.T) {
	allDown := `{` + strings.ReplaceAll(threeUnits, `"fallback"`, `"down": true, "fallback"`) + `}`
	c, env := parse(t, allDown)
	ctx, _, st := run(t, c, "x-uid", "1234")
	if st != api.Stop || ctx.Replied.Code != 503 || ctx.Replied.Body != "unit RZ02 and its fallbacks are down\n" || env.Count("rejected_all_down") != 1 {
		t.Fatalf("all down: %v %+v %v", st, ctx.Replied, env.Values())
	}
	c, env = parse(t, `{"invalid_uid":"reject","invalid_uid_status":422,`+threeUnits+`}`)
	ctx, _, st = run(t, c, "x-uid", "12;DROP")
	if st != api.Stop || ctx.Replied.Code != 422 || env.Count("rejected_invalid_uid") != 1 {
		t.Fatalf("invalid uid: %v %+v", st, ctx.Replied)
	}
	// No uid is not invalid: default unit.
	if ctx, _, st = run(t, c); st != api.Continue || unitOf(ctx) != "RZ01" {
		t.Fatalf("no uid with invalid_uid reject: %v %q", st, unitOf(ctx))
	}
}

// A client cannot choose the unit or the cluster by sending the headers.
func TestClientHeadersAreReplaced(t *testing.T) {
	c, _ := parse(t, `{`+threeUnits+`}`)
	ctx, req, _ := run(t, c, "x-uid", "1", "x-moe-cluster", "rz03", "x-ldc-unit", "RZ03", "x-ldc-unit", "RZ02")
	if v := req.Values("x-moe-cluster"); len(v) != 1 || v[0] != "rz01" {
		t.Fatalf("x-moe-cluster %v", v)
	}
	if v := req.Values("x-ldc-unit"); len(v) != 1 || v[0] != "RZ01" || ctx.RouteCleared != 1 {
		t.Fatalf("x-ldc-unit %v", v)
	}
	// Already right: no route-cache clear.
	if ctx, _, _ = run(t, c, "x-uid", "1", "x-moe-cluster", "rz01", "x-ldc-unit", "RZ01"); ctx.RouteCleared != 0 {
		t.Fatalf("cleared %d", ctx.RouteCleared)
	}
}

func TestResponsePath(t *testing.T) {
	c, env := parse(t, `{`+threeUnits+`}`)
	req := fakeframework.NewRequest("GET", "/", "x-uid", "1234")
	resp := fakeframework.NewResponse(503)
	ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
	ctx.Properties = map[string]string{"response.code_details": "cluster_not_found"}
	f := (*filter)(c)
	f.OnReceive(ctx, req, nil, nil)
	f.Append(ctx, resp, nil, nil)
	if v, _ := resp.Get("x-ldc-unit"); v != "RZ02" || env.Count("cluster_not_found") != 1 {
		t.Fatalf("x-ldc-unit %q, %v", v, env.Values())
	}
	// A reply before the plugin ran: no unit header.
	resp = fakeframework.NewResponse(401)
	if _, st := fakeframework.RunSend(Name, f, fakeframework.NewRequest("GET", "/"), resp, nil); st != api.Continue || resp.Len() != 1 {
		t.Fatalf("%v %v", st, resp.Headers)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	u := `"uid":["$header_x-uid"],"default_unit":"A",`
	two := `"units":[{"name":"A","cluster":"a","slots":["0-49"]},{"name":"B","cluster":"b","slots":["50-99"]}]`
	for _, tc := range []struct{ config, field, reason string }{
		{`{` + two + `,"default_unit":"A"}`, "uid", "at least one variable"},
		{`{"uid":["$nope"],"default_unit":"A",` + two + `}`, "uid[0]", "unknown variable $nope"},
		{`{` + u + `"slot_by":"crc",` + two + `}`, "slot_by", "one of"},
		{`{` + u + `"slots":0,` + two + `}`, "slots", "between 1 and 10000"},
		{`{` + u + `"units":[]}`, "units", "at least one unit"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-99"]},{"name":"A","cluster":"b"}]}`, "units[1].name", "duplicate"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-99"]},{"name":"r/z","cluster":"b"}]}`, "units[1].name", "letters, digits"},
		{`{` + u + `"units":[{"name":"A","slots":["0-99"]}]}`, "units[0].cluster", "required"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-100"]}]}`, "units[0].slots[0]", "outside the slots 0-99"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["[0,30)"]}]}`, "units[0].slots[0]", "want \"<from>-<to>\""},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["50-40"]}]}`, "units[0].slots[0]", "reversed"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-59"]},{"name":"B","cluster":"b","slots":["50-99"]}]}`, "units[1].slots[0]", `slot 50 is already owned by unit "A"`},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-29","60-99"]}]}`, "units", "slots 30-59 belong to no unit"},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-99"],"fallback":["C"]}]}`, "units[0].fallback[0]", `no unit named "C"`},
		{`{` + u + `"units":[{"name":"A","cluster":"a","slots":["0-99"],"fallback":["A"]}]}`, "units[0].fallback[0]", "itself"},
		{`{"uid":["$header_x-uid"],"default_unit":"Z",` + two + `}`, "default_unit", `no unit named "Z"`},
		{`{"uid":["$header_x-uid"],` + two + `}`, "default_unit", "is required"},
		{`{` + u + `"all_down":"open",` + two + `}`, "all_down", "one of"},
		{`{` + u + `"all_down_status":200,` + two + `}`, "all_down_status", "4xx or 5xx"},
		{`{` + u + `"invalid_uid":"drop",` + two + `}`, "invalid_uid", "one of"},
		{`{` + u + `"cluster_header":"","unit_header":"",` + two + `}`, "cluster_header", "needed to steer"},
		{`{` + u + `"admin":{"address":"0.0.0.0:9980"},` + two + `}`, "admin.address", "loopback"},
		{`{` + u + `"admin":{"address":"10.1.2.3:9980"},` + two + `}`, "admin.address", "loopback"},
		{`{` + u + `"admin":{"address":"localhost:9980"},` + two + `}`, "admin.address", "loopback IP:port"},
		{`{` + u + `"admin":{"address":"127.0.0.1:0"},` + two + `}`, "admin.address", "needs a port"},
		{`{` + u + `"admin":{"address":"127.0.0.1:9980","token":"short"},` + two + `}`, "admin.token", "at least 16"},
		{`{` + u + `"admin":{"adress":"127.0.0.1:9980"},` + two + `}`, "admin.adress", "unknown field"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
