package wav

import (
	"bytes"
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	pcm := []int16{0, 1, -1, 32767, -32768, 1234}
	got, rate, err := Decode(bytes.NewReader(Encode(pcm, 16000)), 1<<20)
	if err != nil || rate != 16000 || !slices.Equal(got, pcm) {
		t.Fatalf("Decode = %v %d %v", got, rate, err)
	}
	if _, _, err := Decode(bytes.NewReader([]byte("RIFF....WAVEjunk")), 10); err == nil {
		t.Fatal("garbage decoded")
	}
	got, _, _ = Decode(bytes.NewReader(Encode(pcm, 8000)), 2)
	if len(got) != 2 {
		t.Fatalf("max not applied: %d samples", len(got))
	}
}
