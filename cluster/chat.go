package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// The built-in agent's conversations (package agent's SharedHistory), one
// key per session in a bucket of their own whose entries expire like the
// agent's sessions: a person whose requests reach another node, or a
// device that reconnects to another node, goes on with its conversation.
const (
	chatBucket   = "xzhub_chat"
	chatMaxValue = 512 << 10 // a conversation: 40 messages, tool results of at most 8 KiB
	chatMaxBytes = 256 << 20
)

// chatKey is a session id as a bucket key: ids are the clients' own
// strings, of any length.
func chatKey(session string) string {
	sum := sha256.Sum256([]byte(session))
	return hex.EncodeToString(sum[:])
}

// LoadHistory returns the conversation of session stored by any node (nil
// when there is none).
func (n *Node) LoadHistory(ctx context.Context, session string) ([]byte, error) {
	e, err := n.chat.Get(ctx, chatKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

// SaveHistory stores the conversation of session for every node.
func (n *Node) SaveHistory(ctx context.Context, session string, data []byte) error {
	_, err := n.chat.Put(ctx, chatKey(session), data)
	return err
}
