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
