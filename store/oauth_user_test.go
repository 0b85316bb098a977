package store_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/store"
)

// A grant keeps the person it acts for across a restart.
func TestOAuthGrantKeepsItsUser(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("x"))
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.SaveOAuthClient(ctx, hub.OAuthClient{ID: "c1", Name: "Claude", AuthMethod: "none", Registered: now}); err != nil {
		t.Fatal(err)
	}
	for id, user := range map[string]string{"g1": "alice", "g2": ""} {
		if err := s.SaveOAuthGrant(ctx, hub.OAuthGrant{ID: id, ClientID: "c1", User: user, Approved: now, AccessHash: h[:], AccessExpires: now.Add(time.Hour), RefreshHash: h[:], RefreshExpires: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, grants, err := openStore(t, path, store.Options{}).LoadOAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{}
	for _, g := range grants {
		users[g.ID] = g.User
	}
	if len(users) != 2 || users["g1"] != "alice" || users["g2"] != "" {
		t.Fatalf("grants' users after a restart: %v", users)
	}
}
