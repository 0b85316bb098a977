package voice

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
)

// What the hub itself says (here: that recognition failed) is in the
// device's language: its hello's, else the one it reported at its OTA
// check (LanguageOf), else the hub's setting (Language), else Chinese.
// The stand-in synthesizer records the text it is asked to say.
func TestHubSpeaksTheDevicesLanguage(t *testing.T) {
	for _, tc := range []struct {
		name, hello, ota, setting string
		english                   bool
	}{
		{"hello en-US", "en-US", "", "", true},
		{"OTA en-US", "", "en-US", "", true},
		{"setting en", "", "", "en", true},
		{"hello before setting", "zh-CN", "", "en", false},
		{"OTA before setting", "", "zh-CN", "en", false},
		{"unknown", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				syn := &voiceSynth{}
				e := New(Options{Codec: pcmCodec{}, Recognizer: &recognizer{finishErr: errors.New("503 Service Unavailable")},
					Synthesizer: syn, Brain: &brain{}, Language: tc.setting,
					LanguageOf: func(string) string { return tc.ota }})
				defer e.Close()
				out := newPackets()
				c := e.Open("aa:00:00:00:00:43", tc.hello, down, out)
				defer c.Close()
				c.Listen("start", "manual", "")
				c.Audio(speechFrame(500), 0)
				synctest.Wait()
				c.Listen("stop", "", "")
				<-out.stopped
				said := strings.Join(syn.said(), "|")
				want := "抱歉，语音识别出错了：503 Service Unavailable"
				if tc.english {
					want = "Sorry, speech recognition failed: 503 Service Unavailable"
				}
				if said != want {
					t.Fatalf("the device was told %q, want %q", said, want)
				}
			})
		})
	}
}
