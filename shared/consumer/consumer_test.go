package consumer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

func key(d consumer.Def) (string, error) { return d.Credentials["key"], nil }

func TestBuildIndexesByCredential(t *testing.T) {
	ix, err := consumer.Build([]consumer.Def{
		{Name: "alice", Group: "gold", Credentials: map[string]string{"key": "k1"}},
		{Name: "bob", Credentials: map[string]string{"key": "k2"}, Attributes: map[string]string{"tier": "2"}},
	}, "consumers", key)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := ix.Lookup("k2")
	if !ok || c.Name != "bob" || c.Attributes["tier"] != "2" {
		t.Errorf("lookup k2: %+v %v", c, ok)
	}
	if _, ok := ix.Lookup("nope"); ok {
		t.Error("unknown credential found")
	}
	if c, _ := ix.ByName("alice"); c.Group != "gold" {
		t.Errorf("by name: %+v", c)
	}
}

func TestBuildRejectsBadDefinitions(t *testing.T) {
	cases := []struct {
		defs  []consumer.Def
		field string
	}{
		{[]consumer.Def{{Credentials: map[string]string{"key": "k"}}}, "consumers[0].name"},
		{[]consumer.Def{{Name: "a", Credentials: map[string]string{"key": "k"}}, {Name: "a", Credentials: map[string]string{"key": "j"}}}, "consumers[1].name"},
		{[]consumer.Def{{Name: "a"}}, "consumers[0].credentials"},
		{[]consumer.Def{{Name: "a", Credentials: map[string]string{"key": "k"}}, {Name: "b", Credentials: map[string]string{"key": "k"}}}, "consumers[1].credentials"},
	}
	for _, tc := range cases {
		_, err := consumer.Build(tc.defs, "consumers", key)
		var fe *api.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: error %v, want field %s", tc.defs, err, tc.field)
		}
	}
	_, err := consumer.Build([]consumer.Def{{Name: "a"}}, "c", func(consumer.Def) (string, error) { return "", errors.New("bad hash") })
	if err == nil || !strings.Contains(err.Error(), "bad hash") {
		t.Errorf("key error lost: %v", err)
	}
}
