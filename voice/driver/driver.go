// Package driver declares what the voice engine's parts implement: speech
// recognition (Recognizer, package asr), speech synthesis (Synthesizer,
// package tts) and the Opus codec (Codec, package opus).
//
// It is the engine's side of the seam, as database/sql/driver is
// database/sql's: the providers implement these interfaces without
// importing the engine (whose own tests import opus, so opus could not
// import it), and package voice names them under the same names
// (voice.Recognizer is driver.Recognizer).
package driver

import "context"

// Recognizer turns speech into text.
type Recognizer interface {
	// Start opens a recognition of 16 kHz mono PCM in language ("zh",
	// "en"; "" lets the provider decide).
	Start(ctx context.Context, language string) (Recognition, error)
}

// Recognition is one utterance being recognised.
type Recognition interface {
	// Write adds PCM as it arrives.
	Write(pcm []int16) error
	// Finish ends the audio and returns the text ("" when nothing was said).
	Finish(ctx context.Context) (string, error)
	// Close releases it (after Finish, or to abandon it).
	Close()
}

// OpusWriter is an optional capability of a Recognition: it takes the
// device's Opus packets as they arrive instead of PCM, so that the engine
// need not decode them. The packets are mono, of the uplink's sample rate
// (16 kHz) and of the duration their TOC byte says (RFC 6716 §3.1; 60 ms
// from the firmware); the engine has checked their framing
// (ogg.OpusSamples) and gives each one the recognition may keep. A
// recognition written packets is written no PCM, and the reverse.
type OpusWriter interface {
	WriteOpus(packet []byte) error
}

// OpusRecognizer is a Recognizer whose recognitions may take Opus.
// TakesOpus reports whether the ones Start opens now implement OpusWriter
// (a setting may decide it): the engine asks as an utterance begins,
// before its recognition is open, whether to keep its packets instead of
// decoding them. It passes packets only when no end-of-speech detector
// needs PCM (listen mode manual, or no VAD), and PCM otherwise.
type OpusRecognizer interface {
	Recognizer
	TakesOpus() bool
}

// TakesOpus reports whether r is an OpusRecognizer whose recognitions
// take Opus now.
func TakesOpus(r Recognizer) bool {
	o, ok := r.(OpusRecognizer)
	return ok && o.TakesOpus()
}

// Synthesizer turns text into speech.
type Synthesizer interface {
	// Synthesize streams the speech of text in voice ("" for the default).
	Synthesize(ctx context.Context, text, voice string) (Speech, error)
}

// Speech is synthesised audio as it arrives.
type Speech interface {
	// SampleRate of the PCM Read returns.
	SampleRate() int
	// Read returns the next PCM chunk, or io.EOF after the last. The
	// chunk is valid until the next Read or Close (a synthesis may reuse
	// its buffer).
	Read(ctx context.Context) ([]int16, error)
	Close()
}

// Codec makes the Opus coders of one conversation: a decoder for each
// utterance, an encoder for each answer. A coder that has a Release()
// method is released once the engine is done with it and not used
// after: a codec may keep it, reset, for the next (package opus does).
type Codec interface {
	// NewDecoder decodes mono Opus to PCM at rate.
	NewDecoder(rate int) (Decoder, error)
	// NewEncoder encodes mono PCM at rate into packets of frameMs.
	NewEncoder(rate, frameMs int) (Encoder, error)
}

// Decoder decodes one Opus packet.
type Decoder interface {
	Decode(packet []byte) ([]int16, error)
}

// Encoder encodes exactly one frame of PCM into one packet.
type Encoder interface {
	Encode(pcm []int16) ([]byte, error)
}
