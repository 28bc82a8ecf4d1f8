package authn_test

import (
	"testing"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
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

func TestAnonymousConsumerIsMarked(t *testing.T) {
	a := (&authn.Options{AnonymousConsumer: "guest"}).Anonymous()
	if !consumer.IsAnonymous(a) || a.Name != "guest" {
		t.Fatalf("anonymous consumer %+v", a)
	}
	if (&authn.Options{}).Anonymous() != nil {
		t.Fatal("anonymous consumer without a name")
	}
}

func TestStats(t *testing.T) {
	env := fakeframework.NewEnv("p", false)
	s := authn.NewStats(env.Metrics(), "missing")
	s.Allowed()
	s.Denied("missing")
	s.Denied("nope")
	if env.Count("allowed") != 1 || env.Count("denied_missing") != 1 || env.Count("denied_other") != 1 {
		t.Fatal("counters")
	}
}
