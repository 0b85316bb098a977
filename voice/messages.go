package voice

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The server's messages of a turn, as firmware 2.4.2 handles them
// (application.cc OnIncomingJson; voice-and-mqtt.md §1.2).

func sttMessage(text string) []byte {
	return mustJSON(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"stt", text})
}

// llmMessage sets the device's face; the firmware ignores text.
func llmMessage(emotion string) []byte {
	return mustJSON(struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Emotion string `json:"emotion"`
	}{"llm", emotionEmoji[emotion], emotion})
}

var emotionEmoji = map[string]string{"neutral": "😶", "thinking": "🤔", "sad": "😔", "happy": "🙂"}

func ttsMessage(state string) []byte {
	return mustJSON(struct {
		Type  string `json:"type"`
		State string `json:"state"`
	}{"tts", state})
}

// sentenceMessage is shown as the assistant's bubble. The firmware copies
// it into a fixed display buffer: it is cut at 500 bytes on a rune.
func sentenceMessage(text string) []byte {
	if len(text) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	return mustJSON(struct {
		Type  string `json:"type"`
		State string `json:"state"`
		Text  string `json:"text"`
	}{"tts", "sentence_start", text})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // unreachable: only strings
	}
	return b
}

// english reports whether the hub's own words to a device in language
// are English: Chinese for a Chinese device ("zh", "zh-CN", "zh_TW") and
// when the language is unknown (the firmware's default), English for any
// other language (the hub speaks only these two).
func english(language string) bool {
	return language != "" && !strings.HasPrefix(strings.ToLower(language), "zh")
}

// notConfigured is what a device shows and says when a turn cannot be
// answered in speech, in the device's language.
func notConfigured(language, what string) string {
	if english(language) {
		return "Voice is not configured on this hub: set " + what + "."
	}
	return "这个 hub 还没有配置语音：请设置 " + what + "。"
}

// failed is what a device shows and says when a turn failed.
func failed(language, stage string, err error) string {
	msg := err.Error()
	if len(msg) > 160 {
		cut := 160
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	if english(language) {
		return "Sorry, " + map[string]string{"recognition": "speech recognition", "answer": "the answer", "speech": "speech synthesis"}[stage] + " failed: " + msg
	}
	return "抱歉，" + map[string]string{"recognition": "语音识别", "answer": "回答", "speech": "语音合成"}[stage] + "出错了：" + msg
}
