package jsonscan

import (
	"fmt"
	"testing"
)

func TestObjectMembers(t *testing.T) {
	keys := []string{"content", "isError"}
	vals := make([][]byte, 2)
	if !ObjectMembers([]byte(` {"isError":true, "content":[{"type":"text","text":"x"}]} `), keys, vals) {
		t.Fatal("not found")
	}
	if string(vals[0]) != `[{"type":"text","text":"x"}]` || string(vals[1]) != "true" {
		t.Fatalf("vals %q", vals)
	}
	for _, bad := range []string{`[1]`, `{"isError":true`, `{"IsError":true}`, ``, `"s"`} {
		if ObjectMembers([]byte(bad), keys, make([][]byte, 2)) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestArrayElementsAndString(t *testing.T) {
	var got []string
	ok := arrayElements([]byte(` [ {"a":"]"} , 1,"x\"y",[2,[3]] ,null] `), func(e []byte) bool {
		got = append(got, string(e))
		return true
	})
	want := []string{`{"a":"]"}`, `1`, `"x\"y"`, `[2,[3]]`, `null`}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v %q", ok, got)
	}
	for _, bad := range []string{`{}`, `[1,`, ``} {
		if arrayElements([]byte(bad), func([]byte) bool { t.Error("called"); return true }) {
			t.Errorf("%q accepted", bad)
		}
	}
	n := 0
	arrayElements([]byte(`[1,2,3]`), func([]byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("did not stop: %d", n)
	}
	for in, want := range map[string]string{`"plain"`: "plain", `"a\nb\u00e9"`: "a\nbé", `"é"`: "é"} {
		if s, ok := String([]byte(in)); !ok || s != want {
			t.Errorf("String(%s) = %q %v", in, s, ok)
		}
	}
	for _, bad := range []string{`1`, `null`, `"x`, ``} {
		if _, ok := String([]byte(bad)); ok {
			t.Errorf("String(%s) accepted", bad)
		}
	}
}
