package metrics

import "github.com/prometheus/client_golang/prometheus"

// voiceMetrics are the spoken conversations' turns (package voice).
type voiceMetrics struct {
	turns  *prometheus.CounterVec   // outcome
	stages *prometheus.HistogramVec // stage: recognition, first_sentence, first_audio
}

func newVoiceMetrics(r *prometheus.Registry) voiceMetrics {
	v := voiceMetrics{
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xiaozhi_hub_voice_turns_total", Help: "Spoken turns by outcome (ok, empty, aborted, timeout, not_configured, recognition_failed, answer_failed, speech_failed).",
		}, []string{"outcome"}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xiaozhi_hub_voice_stage_seconds",
			Help:    "Time from the end of an utterance to: the recognised text (recognition), the model's first sentence (first_sentence), the first audio frame out (first_audio).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 4, 8, 16, 30},
		}, []string{"stage"}),
	}
	r.MustRegister(v.turns, v.stages)
	return v
}

// VoiceTurn counts a finished spoken turn by outcome, and the time in
// seconds from the end of the utterance to each stage the turn reached
// (0: not reached).
func (m *Metrics) VoiceTurn(outcome string, recognition, firstSentence, firstAudio float64) {
	if m == nil {
		return
	}
	m.voice.turns.WithLabelValues(outcome).Inc()
	for stage, s := range map[string]float64{"recognition": recognition, "first_sentence": firstSentence, "first_audio": firstAudio} {
		if s > 0 {
			m.voice.stages.WithLabelValues(stage).Observe(s)
		}
	}
}
