package opus

import "github.com/xiaozhi-hub/hub/voice/driver"

// Codec makes this package's coders for the voice engine (driver.Codec).
type Codec struct{}

// NewDecoder returns NewDecoder(rate) as a driver.Decoder.
func (Codec) NewDecoder(rate int) (driver.Decoder, error) {
	d, err := NewDecoder(rate)
	if err != nil {
		return nil, err // not a nil *Decoder in a non-nil interface
	}
	return d, nil
}

// NewEncoder returns NewEncoder(rate, frameMs) as a driver.Encoder.
func (Codec) NewEncoder(rate, frameMs int) (driver.Encoder, error) {
	e, err := NewEncoder(rate, frameMs)
	if err != nil {
		return nil, err
	}
	return e, nil
}
