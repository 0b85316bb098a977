package provider

import (
	"strings"
	"testing"
)

func TestUnknownListsTheKnownNames(t *testing.T) {
	for known, want := range map[string]string{
		"a":     `x-provider: "z" is not a`,
		"a b":   `x-provider: "z" is not a or b`,
		"a b c": `x-provider: "z" is not a, b or c`,
	} {
		if got := Unknown("x-provider", "z", strings.Fields(known)).Error(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ws := [2]string{"ws", "wss"}
	for base, ok := range map[string]bool{"": true, "ws://h:1": true, "wss://h/p": true, "http://h": false, "ws://": false, "h:1": false} {
		if err := CheckURL("k", base, ws); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", base, err)
		}
	}
}
