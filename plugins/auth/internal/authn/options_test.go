package authn_test

import (
	"testing"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     authn.Options
		field string
	}{
		{"defaults", authn.DefaultOptions(), ""},
		{"header off", authn.Options{}, ""},
		{"bad header name", authn.Options{ConsumerHeader: "x consumer"}, "consumer_header"},
		{"CRLF in anonymous name", authn.Options{AnonymousConsumer: "guest\r\nx: 1"}, "anonymous_consumer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if fe, ok := err.(*api.FieldError); !ok || fe.Field != tc.field {
				t.Fatalf("got %v, want field %s", err, tc.field)
			}
		})
	}
	o := authn.Options{ConsumerHeader: "X-Consumer"}
	if o.Validate() != nil || o.ConsumerHeader != "x-consumer" {
		t.Fatalf("header not lower-cased: %q", o.ConsumerHeader)
	}
}

func TestAnonymousAndAlreadyAuthenticated(t *testing.T) {
	o := authn.Options{AnonymousConsumer: "guest"}
	a := o.Anonymous()
	if !authn.IsAnonymous(a) || a.Name != "guest" {
		t.Fatalf("anonymous consumer %+v", a)
	}
	if (&authn.Options{}).Anonymous() != nil {
		t.Fatal("anonymous consumer without a name")
	}
	ctx := fakeframework.NewContext("p", fakeframework.NewRequest("GET", "/"))
	if authn.AlreadyAuthenticated(ctx) {
		t.Fatal("no consumer yet")
	}
	ctx.SetConsumer(a)
	if authn.AlreadyAuthenticated(ctx) {
		t.Fatal("anonymous counts as authenticated")
	}
	ctx.SetConsumer(&api.Consumer{Name: "alice"})
	if !authn.AlreadyAuthenticated(ctx) {
		t.Fatal("real consumer not seen")
	}
}

func TestConsumerSpec(t *testing.T) {
	s := authn.ConsumerSpec{Name: "alice", Group: "g", Attributes: map[string]string{"tier": "gold"}}
	if err := s.Check("consumers[0]"); err != nil {
		t.Fatal(err)
	}
	c := s.Consumer()
	s.Attributes["tier"] = "changed"
	if c.Attributes["tier"] != "gold" {
		t.Fatal("consumer shares the config's attribute map")
	}
	bad := authn.ConsumerSpec{Name: "a", Attributes: map[string]string{authn.AnonymousAttribute: "true"}}
	if fe, ok := bad.Check("consumers[1]").(*api.FieldError); !ok || fe.Field != "consumers[1].attributes."+authn.AnonymousAttribute {
		t.Fatalf("reserved attribute accepted: %v", fe)
	}
	if err := (&authn.ConsumerSpec{}).Check("c"); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestStatsAndDigest(t *testing.T) {
	env := fakeframework.NewEnv("p", false)
	s := authn.NewStats(env.Metrics(), "missing")
	s.Allowed()
	s.Denied("missing")
	s.Denied("nope")
	if env.Count("allowed") != 1 || env.Count("denied_missing") != 1 || env.Count("denied_other") != 1 {
		t.Fatal("counters")
	}
	a, b, c := authn.DigestOf("k1"), authn.DigestOf("k1"), authn.DigestOf("k2")
	if !authn.EqualDigest(&a, &b) || authn.EqualDigest(&a, &c) {
		t.Fatal("digest compare")
	}
}
